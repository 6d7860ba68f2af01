import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { UpstreamProtocol } from "../provider";
import { RequestRecorder } from "./request-recorder";
import type { ReplyContext, SimulatedProtocol, SimulationInput, SimulatorRoute } from "./simulated-protocol";
import { simulateTurn } from "./simulated-turn";
import { routeRequest, simulatedProtocols } from "./simulator-routes";
import type { Simulator, SimulatorFault, SimulatorOptions } from "./simulator-types";
import { sleepUntil, writeEventStream } from "./stream-writer";

export type {
  RecordedRequest,
  RequestEnding,
  Simulator,
  SimulatorFault,
  SimulatorOptions,
  StreamBreakMode,
} from "./simulator-types";

/** Larger request bodies are refused with 413, as a real upstream would. */
export const simulatorRequestBodyBytesMax = 16 * 1024 * 1024;

const idPrefixes: Readonly<Record<UpstreamProtocol, string>> = {
  "chat-completions": "chatcmpl-sim",
  responses: "resp_sim",
  messages: "msg_sim",
  "generate-content": "sim",
};

interface SimulatorState {
  fault: SimulatorFault | undefined;
  replyCount: number;
  readonly latencyMs: number;
  readonly msPerToken: number;
  readonly recorder: RequestRecorder;
}

/**
 * An upstream stand-in that speaks all four protocols (JSON and SSE) on their real paths, so the real
 * adapters and the official clients can be pointed at it. Answers are deterministic per prompt and carry
 * real token counts.
 */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const tokensPerSecond = options.tokensPerSecond ?? Number.POSITIVE_INFINITY;
  const state: SimulatorState = {
    fault: options.fault,
    replyCount: 0,
    latencyMs: Math.max(0, options.latencyMs ?? 0),
    msPerToken: tokensPerSecond > 0 && Number.isFinite(tokensPerSecond) ? 1000 / tokensPerSecond : 0,
    recorder: new RequestRecorder(),
  };
  // requestTimeout 0: a slow simulated stream must not be cut by the server's own request deadline.
  const server = createServer(
    { noDelay: true, requestTimeout: 0, keepAliveTimeout: 65_000 },
    (request, response) => {
      handleRequest(state, request, response).catch(() => {
        if (!response.headersSent) response.writeHead(500).end();
        else response.destroy();
      });
    },
  );
  const host = options.host ?? "127.0.0.1";
  await listen(server, options.port ?? 0, host);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    setFault: (fault) => {
      state.fault = fault;
    },
    recordedRequests: () => state.recorder.all(),
    receivedRequestCount: () => state.recorder.receivedCount,
    lastRequest: () => state.recorder.last(),
    clearRecordedRequests: () => state.recorder.clear(),
    close: () => closeServer(server),
  };
}

async function handleRequest(state: SimulatorState, request: IncomingMessage, response: ServerResponse) {
  const url = request.url ?? "/";
  const queryStart = url.indexOf("?");
  const pathname = queryStart === -1 ? url : url.slice(0, queryStart);
  const bodyText = await readBody(request);
  if (bodyText === undefined)
    return sendJson(response, 413, { error: { message: "request body too large" } });
  const body = parseJsonOrText(bodyText);
  state.recorder.record(request, response, body.value);
  const route = routeRequest(request.method, pathname);
  if (route === undefined) {
    return sendJson(response, 404, {
      error: { message: `no simulated endpoint at ${request.method} ${pathname}` },
    });
  }
  const protocol = simulatedProtocols[route.protocol];
  const fault = state.fault;
  if (fault?.kind === "status") {
    const message = fault.message ?? `simulated upstream error ${fault.status}`;
    return sendJson(response, fault.status, protocol.renderError(fault.status, message));
  }
  if (fault?.kind === "hang") return;
  const input = parseInput(protocol, route, body, url);
  if (!input.ok) return sendJson(response, 400, protocol.renderError(400, input.message));
  await answer(state, response, protocol, route, input.input);
}

function parseInput(
  protocol: SimulatedProtocol,
  route: SimulatorRoute,
  body: ReturnType<typeof parseJsonOrText>,
  url: string,
): { ok: true; input: SimulationInput } | { ok: false; message: string } {
  if (!body.isJson) return { ok: false, message: "request body is not valid JSON" };
  // Without alt=sse this protocol streams one JSON array, which the simulator does not speak.
  if (route.pathStream && !/[?&]alt=sse(&|$)/.test(url)) {
    return { ok: false, message: "the simulator streams only with alt=sse" };
  }
  return protocol.parseRequest(body.value, route);
}

async function answer(
  state: SimulatorState,
  response: ServerResponse,
  protocol: SimulatedProtocol,
  route: SimulatorRoute,
  input: SimulationInput,
): Promise<void> {
  const turn = simulateTurn({
    messages: input.messages,
    maxOutputTokens: input.maxOutputTokens,
    tools: input.tools ?? [],
    toolChoice: input.toolChoice ?? "auto",
    parallelToolCalls: input.parallelToolCalls ?? true,
    outputFormat: input.outputFormat,
    imageCount: input.imageCount ?? 0,
  });
  const completion =
    state.fault?.kind === "refuse" && turn.toolCalls.length === 0 ? { ...turn, refused: true } : turn;
  state.replyCount += 1;
  const context: ReplyContext = {
    id: `${idPrefixes[route.protocol]}${state.replyCount}`,
    createdUnixSeconds: Math.floor(Date.now() / 1000),
    model: input.model,
    includeStreamUsage: input.includeStreamUsage,
  };
  const fault = state.fault;
  if (!input.stream) {
    await sleepUntil(performance.now() + state.latencyMs + completion.outputTokens * state.msPerToken);
    if (response.destroyed) return;
    if (fault?.kind === "malformed-json") return sendText(response, 200, '{"id": "broken", "choices": [');
    if (fault?.kind === "unexpected-shape") return sendJson(response, 200, { unexpected: true });
    return sendJson(response, 200, protocol.renderJson(completion, context));
  }
  const transcript = protocol.renderStream(completion, context);
  if (fault?.kind === "malformed-json" || fault?.kind === "unexpected-shape") {
    const badFrame =
      fault.kind === "malformed-json" ? 'data: {"broken": \n\n' : 'data: {"unexpected": true}\n\n';
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(transcript.opening + badFrame);
    return;
  }
  const streamBreak = fault?.kind === "break-stream" ? fault : undefined;
  const pacing = { latencyMs: state.latencyMs, msPerToken: state.msPerToken };
  const deltaTokens = transcript.deltaTokens ?? completion.pieceTokens;
  await writeEventStream(response, transcript, deltaTokens, pacing, streamBreak);
}

/** The body as text, or undefined when it is larger than the simulator accepts. */
async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > simulatorRequestBodyBytesMax) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseJsonOrText(text: string): { isJson: boolean; value: unknown } {
  try {
    return { isJson: true, value: JSON.parse(text) };
  } catch {
    return { isJson: false, value: text };
  }
}

function sendJson(response: ServerResponse, status: number, payload: unknown): void {
  sendText(response, status, JSON.stringify(payload));
}

function sendText(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}
