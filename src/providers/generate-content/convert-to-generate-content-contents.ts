import {
  type ContentPart,
  type GenerationMessage,
  type ToolCall,
  UnsupportedRequestError,
} from "../provider";
import { quotedToolCallId } from "../tool-call-ids";
import { skipThoughtSignatureValidator, thoughtSignatureOf } from "./generate-content-tool-call-id";
import { imageMediaTypeOfUrl } from "./image-media-type";

export type GenerateContentPart =
  | { text: string }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { fileUri: string; mimeType: string } }
  | { functionCall: { name: string; args: Record<string, unknown> }; thoughtSignature?: string }
  | { functionResponse: { name: string; response: Record<string, unknown> } };

export interface GenerateContentContent {
  role: "user" | "model";
  parts: GenerateContentPart[];
}

/**
 * The conversation in this protocol's turns. System messages are not turns (they become
 * `systemInstruction`); the assistant is `model`; tool results are `functionResponse` parts of a user turn,
 * consecutive results in one turn, each named by the function of the call it answers. Call ids are not sent:
 * the protocol pairs calls and results by order and name.
 */
export function convertToGenerateContentContents(
  messages: readonly GenerationMessage[],
): GenerateContentContent[] {
  const callsById = new Map<string, ToolCall>();
  const contents: GenerateContentContent[] = [];
  let results: GenerateContentContent | undefined;
  for (const message of messages) {
    if (message.role !== "tool") results = undefined;
    switch (message.role) {
      case "system":
        continue;
      case "user":
        contents.push({ role: "user", parts: message.content.map(userPartOf) });
        continue;
      case "assistant":
        for (const call of message.toolCalls) callsById.set(call.id, call);
        contents.push({ role: "model", parts: modelPartsOf(message.content, message.toolCalls) });
        continue;
      case "tool": {
        const call = callsById.get(message.toolCallId);
        // The result must be named by its function, which only the call it answers knows.
        if (call === undefined) {
          throw new UnsupportedRequestError(
            `tool result for call ${quotedToolCallId(message.toolCallId)}: answers no tool call of an earlier assistant message`,
          );
        }
        if (results === undefined) {
          results = { role: "user", parts: [] };
          contents.push(results);
        }
        results.parts.push({ functionResponse: { name: call.name, response: responseOf(message.content) } });
        continue;
      }
      default: {
        const unreachable: never = message;
        throw new Error(`unknown message ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return contents;
}

function userPartOf(part: ContentPart): GenerateContentPart {
  if (part.type === "text") return { text: part.text };
  // `detail` has no counterpart per part here; the image goes at the model's own resolution.
  const image = part.image;
  return image.kind === "base64"
    ? { inlineData: { mimeType: image.mediaType, data: image.data } }
    : { fileData: { fileUri: image.url, mimeType: imageMediaTypeOfUrl(image.url) } };
}

/**
 * Text, then the calls. The first call of a model turn must carry a thought signature: the one the client
 * echoed back inside the call's id, else the documented sentinel (the history came from elsewhere).
 */
function modelPartsOf(text: string, toolCalls: readonly ToolCall[]): GenerateContentPart[] {
  const parts: GenerateContentPart[] = text === "" && toolCalls.length > 0 ? [] : [{ text }];
  toolCalls.forEach((call, index) => {
    const signature =
      thoughtSignatureOf(call.id) ?? (index === 0 ? skipThoughtSignatureValidator : undefined);
    parts.push({
      functionCall: { name: call.name, args: argumentsObjectOf(call) },
      ...(signature !== undefined && { thoughtSignature: signature }),
    });
  });
  return parts;
}

/** The protocol takes arguments as an object; empty arguments (a call without parameters) are `{}`. */
function argumentsObjectOf(call: ToolCall): Record<string, unknown> {
  if (call.arguments.trim() === "") return {};
  const value = parseJson(call.arguments);
  if (!isJsonObject(value)) {
    throw new UnsupportedRequestError(
      `arguments of tool call ${quotedToolCallId(call.id)}: not a JSON object`,
    );
  }
  return value;
}

/**
 * The protocol takes a result as an object: a JSON-object result as it is, anything else (text, a number,
 * an array) under `output`, the key the protocol documents for a function's output.
 */
function responseOf(content: string): Record<string, unknown> {
  const value = parseJson(content);
  return isJsonObject(value) ? value : { output: content };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
