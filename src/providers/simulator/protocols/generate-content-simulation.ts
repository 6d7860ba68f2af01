import type { SimulatedMessage } from "../simulated-completion";
import {
  contentText,
  dataFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedTurn } from "../simulated-turn";
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

function reply(
  context: ReplyContext,
  text: string,
  finishReason: string | undefined,
  usage: ReturnType<typeof usageMetadata>,
) {
  return {
    candidates: [
      { content: { parts: [{ text }], role: "model" }, ...(finishReason && { finishReason }), index: 0 },
    ],
    usageMetadata: usage,
    modelVersion: context.model,
    responseId: context.id,
  };
}

function finishReason(completion: SimulatedTurn): string {
  return completion.finish === "length" ? "MAX_TOKENS" : "STOP";
}

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  // This upstream ends its event lines with CRLF, which keeps the adapters' parser honest.
  const frame = (payload: unknown) => dataFrame(payload, "\r\n");
  let tokensSoFar = 0;
  const deltas = completion.pieces.map((piece, index) => {
    tokensSoFar += completion.pieceTokens[index]!;
    return frame(reply(context, piece, undefined, usageMetadata(completion, tokensSoFar)));
  });
  return {
    opening: "",
    deltas,
    closing: frame(
      reply(context, "", finishReason(completion), usageMetadata(completion, completion.outputTokens)),
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
    const request = parsed.data;
    const system: SimulatedMessage[] = request.systemInstruction
      ? [{ role: "system", text: contentText(request.systemInstruction.parts) }]
      : [];
    return {
      ok: true,
      input: {
        model: route.pathModel ?? "",
        messages: [
          ...system,
          ...request.contents.map((content) => ({
            // The simulated answer is keyed on the chat roles, so `model` reads as `assistant`.
            role: content.role === "model" ? "assistant" : "user",
            text: contentText(content.parts),
          })),
        ],
        maxOutputTokens: request.generationConfig?.maxOutputTokens ?? undefined,
        stream: route.pathStream === true,
        includeStreamUsage: true,
      },
    };
  },

  renderJson(completion, context) {
    return reply(
      context,
      completion.text,
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
