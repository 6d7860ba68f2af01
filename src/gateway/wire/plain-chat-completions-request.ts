import type { GenerationMessage } from "../../providers/provider";
import {
  outputTokensMaximum,
  temperatureMaximum,
  temperatureMinimum,
  topPMaximum,
  topPMinimum,
} from "./generation-parameter-schemas";
import { type ParsedGenerationRequest, parsedGenerationRequestOf } from "./parsed-generation-request";

/**
 * The shape nearly every chat-completions body has — text messages, the model, streaming and the basic
 * sampling fields — read by hand in one walk, giving exactly what the schema (chat-completions-request.ts)
 * gives for it. Walking the schema cost more than any other part of the gateway's own work on a request.
 * Anything else, valid or not, answers undefined and goes to the schema, which names what is wrong; so
 * this accepts only bodies the schema accepts.
 */

const plainFields = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
]);

/** Messages read here; a longer conversation goes to the schema (a bound on the walk). */
const plainMessagesMax = 1_000;

export function plainChatCompletionsRequestOf(body: unknown): ParsedGenerationRequest | undefined {
  if (!isPlainObject(body)) return undefined;
  if (!Object.keys(body).every((field) => plainFields.has(field))) return undefined;
  const { model, messages, stream, stream_options: streamOptions } = body;
  if (typeof model !== "string" || model === "") return undefined;
  if (!(stream == null || typeof stream === "boolean")) return undefined;
  if (!(streamOptions == null || (stream === true && isUsageOptionOnly(streamOptions)))) return undefined;
  const temperature = numberWithin(body.temperature, temperatureMinimum, temperatureMaximum);
  const topP = numberWithin(body.top_p, topPMinimum, topPMaximum);
  const maxTokens = outputTokensOf(body.max_tokens);
  const maxCompletionTokens = outputTokensOf(body.max_completion_tokens);
  if (temperature === refused || topP === refused) return undefined;
  if (maxTokens === refused || maxCompletionTokens === refused) return undefined;
  // Both limits with different values is refused by the schema's path, which says so.
  if (maxTokens != null && maxCompletionTokens != null && maxTokens !== maxCompletionTokens) return undefined;
  const generationMessages = textMessagesOf(messages);
  if (generationMessages === undefined) return undefined;
  return parsedGenerationRequestOf(
    { model, messages: generationMessages, stream: stream ?? false },
    { temperature, topP, maxOutputTokens: maxCompletionTokens ?? maxTokens },
  );
}

const refused = Symbol("refused");

/** Null or absent is "not sent"; a finite number within the bounds is itself; anything else is refused. */
function numberWithin(value: unknown, minimum: number, maximum: number): number | null | typeof refused {
  if (value == null) return null;
  if (typeof value !== "number" || !(value >= minimum && value <= maximum)) return refused;
  return value;
}

function outputTokensOf(value: unknown): number | null | typeof refused {
  if (value == null) return null;
  if (!Number.isSafeInteger(value) || (value as number) <= 0 || (value as number) > outputTokensMaximum)
    return refused;
  return value as number;
}

/** Messages of role and string content only (no names, parts, tool calls or tool results). */
function textMessagesOf(messages: unknown): GenerationMessage[] | undefined {
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > plainMessagesMax)
    return undefined;
  const result: GenerationMessage[] = [];
  for (const message of messages) {
    if (!isPlainObject(message)) return undefined;
    const { role, content } = message;
    if (typeof content !== "string" || Object.keys(message).length !== 2) return undefined;
    switch (role) {
      case "system":
      case "developer":
        result.push({ role: "system", content });
        break;
      case "user":
        result.push({ role: "user", content: [{ type: "text", text: content }] });
        break;
      case "assistant":
        result.push({ role: "assistant", content, toolCalls: [] });
        break;
      default:
        return undefined;
    }
  }
  return result;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `{ include_usage }` alone, as the official clients send it with a stream; anything else goes to the schema. */
function isUsageOptionOnly(options: unknown): boolean {
  if (!isPlainObject(options)) return false;
  const { include_usage: includeUsage, ...others } = options;
  return Object.keys(others).length === 0 && (includeUsage == null || typeof includeUsage === "boolean");
}
