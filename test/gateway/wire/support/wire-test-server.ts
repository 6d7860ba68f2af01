import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ApiError, apiErrors, errorBodyOf } from "../../../../src/gateway/api-error";
import type { BilledUsage } from "../../../../src/gateway/wire/billed-usage";
import { chatCompletionBodyOf } from "../../../../src/gateway/wire/chat-completion-body";
import { parseChatCompletionsRequest } from "../../../../src/gateway/wire/chat-completions-request";
import { openChatCompletionsStream } from "../../../../src/gateway/wire/chat-completions-stream";
import type { EventStreamSink } from "../../../../src/gateway/wire/event-stream-sink";
import type { ParsedGenerationRequest } from "../../../../src/gateway/wire/parsed-generation-request";
import { responseBodyOf } from "../../../../src/gateway/wire/response-body";
import { parseResponsesRequest } from "../../../../src/gateway/wire/responses-request";
import { openResponsesStream } from "../../../../src/gateway/wire/responses-stream";
import { textOfMessage } from "../../../../src/providers/message-text";

/**
 * A stand-in for the gateway's edge, built from nothing but the wire modules, so that the official client
 * can be pointed at them. The generation is canned; a last message of `failingPrompt` makes the stream fail
 * after its first delta, as an upstream that drops mid-answer would.
 */

export const cannedPieces = ["Rivers ", "bend because ", "water erodes ", 'the "outer" bank.'];
export const cannedText = cannedPieces.join("");
export const cannedUsage: BilledUsage = {
  inputTokens: 21,
  cachedInputTokens: 5,
  outputTokens: 12,
  reasoningTokens: 2,
};
export const fixedCreatedAtMs = 1_767_225_600_123;
export const failingPrompt = "fail after the first piece";
export const upstreamFailureMessage = "the upstream closed the connection";

export interface WireTestServer {
  baseUrl: string;
  /** Every request the client sent, as our parsers read it. */
  parsedRequests: ParsedGenerationRequest[];
  close(): Promise<void>;
}

type Endpoint = "chat" | "responses";

export async function startWireTestServer(): Promise<WireTestServer> {
  const parsedRequests: ParsedGenerationRequest[] = [];
  const server = createServer((request, response) => {
    handle(request, response, parsedRequests).catch((error: unknown) => {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    parsedRequests,
    close: () =>
      new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  parsedRequests: ParsedGenerationRequest[],
): Promise<void> {
  const endpoint = endpointOf(request);
  if (!endpoint) {
    sendJson(response, 404, errorBodyOf(apiErrors.notFound("no such path")));
    return;
  }
  let parsed: ParsedGenerationRequest;
  try {
    const body: unknown = JSON.parse(await bodyOf(request));
    parsed = endpoint === "chat" ? parseChatCompletionsRequest(body) : parseResponsesRequest(body);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    sendJson(response, error.httpStatus, errorBodyOf(error));
    return;
  }
  parsedRequests.push(parsed);
  const last = parsed.messages.at(-1);
  const fails = last !== undefined && textOfMessage(last) === failingPrompt;
  if (parsed.stream) {
    response.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    });
    stream(endpoint, parsed, sinkOf(response), fails);
    return;
  }
  if (fails) {
    const error = apiErrors.upstreamFailed(upstreamFailureMessage);
    sendJson(response, error.httpStatus, errorBodyOf(error));
    return;
  }
  const reply = {
    model: parsed.model,
    createdAtMs: fixedCreatedAtMs,
    text: cannedText,
    toolCalls: [],
    finishReason: "stop" as const,
    usage: cannedUsage,
  };
  sendJson(response, 200, endpoint === "chat" ? chatCompletionBodyOf(reply) : responseBodyOf(reply));
}

function stream(
  endpoint: Endpoint,
  parsed: ParsedGenerationRequest,
  sink: EventStreamSink,
  fails: boolean,
): void {
  const identity = { model: parsed.model, createdAtMs: fixedCreatedAtMs };
  const writer =
    endpoint === "chat" ? openChatCompletionsStream(sink, identity) : openResponsesStream(sink, identity);
  if (fails) {
    writer.delta(cannedPieces[0]!);
    writer.fail(apiErrors.upstreamFailed(upstreamFailureMessage));
    return;
  }
  for (const piece of cannedPieces) writer.delta(piece);
  writer.complete("stop", cannedUsage);
}

function endpointOf(request: IncomingMessage): Endpoint | undefined {
  if (request.method !== "POST") return undefined;
  if (request.url === "/v1/chat/completions") return "chat";
  if (request.url === "/v1/responses") return "responses";
  return undefined;
}

function sinkOf(response: ServerResponse): EventStreamSink {
  return { write: (chunk) => response.write(chunk), end: () => response.end() };
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
