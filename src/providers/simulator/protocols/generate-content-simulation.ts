import { createHash } from "node:crypto";
import {
  dataFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedToolCall, SimulatedTurn } from "../simulated-turn";
import { generateContentTurnInput, missingThoughtSignature } from "./generate-content-request-input";
import { describeIssue, generateContentRequestSchema } from "./request-schemas";

/** Running totals, as every chunk of a generateContent stream reports them. */
function usageMetadata(completion: SimulatedTurn, candidatesTokenCount: number) {
  return {
    promptTokenCount: completion.promptTokens,
    candidatesTokenCount,
    totalTokenCount: completion.promptTokens + candidatesTokenCount,
    cachedContentTokenCount: 0,
    thoughtsTokenCount: 0,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: completion.promptTokens }],
  };
}

type ReplyPart =
  | { text: string }
  | { functionCall: { name: string; args: unknown }; thoughtSignature?: string };

function reply(
  context: ReplyContext,
  parts: readonly ReplyPart[],
  finishReason: string | undefined,
  usage: ReturnType<typeof usageMetadata>,
) {
  return {
    candidates: [{ content: { parts, role: "model" }, ...(finishReason && { finishReason }), index: 0 }],
    usageMetadata: usage,
    modelVersion: context.model,
    responseId: context.id,
  };
}

/**
 * Calls as the protocol sends them: whole, arguments an object, no id (the Gemini API leaves it out), and
 * an opaque thought signature on the first call of the step only.
 */
function functionCallParts(calls: readonly SimulatedToolCall[]): ReplyPart[] {
  return calls.map((call, index) => ({
    functionCall: { name: call.name, args: JSON.parse(call.arguments) },
    ...(index === 0 && { thoughtSignature: thoughtSignatureOf(call) }),
  }));
}

function thoughtSignatureOf(call: SimulatedToolCall): string {
  return createHash("sha256").update(call.id).digest("base64");
}

/** The protocol says STOP whether the model answered or called functions. */
function finishReason(completion: SimulatedTurn): string {
  return completion.finish === "length" ? "MAX_TOKENS" : "STOP";
}

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  // This upstream ends its event lines with CRLF, which keeps the adapters' parser honest.
  const frame = (payload: unknown) => dataFrame(payload, "\r\n");
  let tokensSoFar = 0;
  const deltas = completion.pieces.map((piece, index) => {
    tokensSoFar += completion.pieceTokens[index]!;
    return frame(reply(context, [{ text: piece }], undefined, usageMetadata(completion, tokensSoFar)));
  });
  // The calls of a step arrive together, whole, in one chunk.
  if (completion.toolCalls.length > 0) {
    const parts = functionCallParts(completion.toolCalls);
    deltas.push(frame(reply(context, parts, undefined, usageMetadata(completion, completion.outputTokens))));
  }
  return {
    opening: "",
    deltas,
    closing: frame(
      reply(
        context,
        [{ text: "" }],
        finishReason(completion),
        usageMetadata(completion, completion.outputTokens),
      ),
    ),
    failure: () =>
      frame({ error: { code: 500, message: "An internal error has occurred.", status: "INTERNAL" } }),
  };
}

const errorStatuses: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** POST …/v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse. */
export const generateContentSimulation: SimulatedProtocol = {
  parseRequest(body, route) {
    const parsed = generateContentRequestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
    const missingSignature = missingThoughtSignature(parsed.data);
    if (missingSignature !== undefined) return { ok: false, message: missingSignature };
    return {
      ok: true,
      input: {
        model: route.pathModel ?? "",
        ...generateContentTurnInput(parsed.data),
        maxOutputTokens: parsed.data.generationConfig?.maxOutputTokens,
        stream: route.pathStream === true,
        includeStreamUsage: true,
      },
    };
  },

  renderJson(completion, context) {
    const parts: ReplyPart[] = [
      ...(completion.text !== "" || completion.toolCalls.length === 0 ? [{ text: completion.text }] : []),
      ...functionCallParts(completion.toolCalls),
    ];
    return reply(
      context,
      parts,
      finishReason(completion),
      usageMetadata(completion, completion.outputTokens),
    );
  },

  renderStream,

  renderError(status, message) {
    return {
      error: {
        code: status,
        message,
        status: errorStatuses[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"),
      },
    };
  },
};
