import { z } from "zod";
import type { ContentPart, GenerationMessage, ToolCall } from "../../providers/provider";
import { readImageUrl } from "./image-url";
import { roleSchema } from "./message-schemas";

/**
 * The items of a responses request's `input`, validated and turned into the internal conversation.
 *
 * - Messages (`{ role, content }`, with or without `type: "message"`): text parts of any text type, in a
 *   user message `input_image` parts by URL (https or base64 data URL), and in an assistant message the
 *   `refusal` parts of an earlier reply, read as the assistant's text: they are what it said, no upstream
 *   protocol takes a refusal as input, and some refuse an empty assistant turn. `file_id` images and every
 *   other part type (files, audio) are refused by name.
 * - `function_call` items (a call the model made earlier) join the assistant turn before them, or start one:
 *   the protocol lists a turn's text and calls as separate items, the internal form keeps them together.
 * - `function_call_output` items answer an earlier call by its `call_id`.
 * - `reasoning` items are refused: the gateway never returns any, so one can only come from elsewhere, and
 *   with nothing stored it could not be resolved (an encrypted one only by the provider that made it).
 *
 * Items and parts are read leniently (unknown keys are dropped) because clients send earlier output back as
 * input, and the official client decorates it (`parsed`, `parsed_arguments`); item `id` and `status` are the
 * bookkeeping of a response the gateway does not keep, so they are not sent on.
 */

const textPartTypes = ["input_text", "output_text", "text"] as const;

const textPartSchema = z.object({
  type: z.enum(textPartTypes),
  text: z.string({ error: "must be a string" }),
});

const imageDetails = ["auto", "low", "high"] as const;

const imagePartSchema = z
  .object({
    type: z.literal("input_image"),
    image_url: z.string({ error: "must be a string" }).nullish(),
    file_id: z
      .null({ error: "not supported: the gateway stores no files; send the image as image_url" })
      .optional(),
    detail: z.enum(imageDetails, { error: 'must be "auto", "low" or "high"' }).nullish(),
  })
  .transform((part, context): ContentPart => {
    if (part.image_url == null) {
      context.addIssue({ code: "custom", path: ["image_url"], message: "is required" });
      return z.NEVER;
    }
    const reading = readImageUrl(part.image_url);
    if (!reading.ok) {
      context.addIssue({ code: "custom", path: ["image_url"], message: reading.message });
      return z.NEVER;
    }
    return { type: "image", image: reading.image, ...(part.detail != null && { detail: part.detail }) };
  });

const refusalPartSchema = z.object({
  type: z.literal("refusal"),
  refusal: z.string({ error: "must be a string" }),
});

const partSchema = z.discriminatedUnion("type", [textPartSchema, imagePartSchema, refusalPartSchema], {
  error: `must be ${[...textPartTypes, "input_image", "refusal"].map((type) => `"${type}"`).join(", ")}`,
});

const contentSchema = z.preprocess(
  // A string is one text part: one path through validation, and errors inside an array keep their index.
  (content) => (typeof content === "string" ? [{ type: "input_text", text: content }] : content),
  z.array(partSchema, { error: "must be a string or an array of content parts" }),
);

const messageItemSchema = z.object({
  type: z.literal("message"),
  role: roleSchema,
  content: contentSchema,
});

const functionCallItemSchema = z.object({
  type: z.literal("function_call"),
  call_id: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
  name: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
  arguments: z.string({ error: "must be a string (the arguments' JSON text)" }),
});

const functionCallOutputItemSchema = z.object({
  type: z.literal("function_call_output"),
  call_id: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
  output: z.preprocess(
    (output) => (typeof output === "string" ? [{ type: "input_text", text: output }] : output),
    z.array(textPartSchema, { error: "must be a string or an array of input_text parts" }),
  ),
});

const itemTypes = ["message", "function_call", "function_call_output"] as const;

const inputItemSchema = z.preprocess(
  // `{ role, content }` without a type is a message: the form official clients send for plain turns.
  (item) =>
    typeof item === "object" && item !== null && !Array.isArray(item) && !("type" in item)
      ? { ...item, type: "message" }
      : item,
  z.discriminatedUnion("type", [messageItemSchema, functionCallItemSchema, functionCallOutputItemSchema], {
    error: (issue) => {
      if (issue.code !== "invalid_union") return "must be an object with role and content, or a typed item";
      const type = (issue.input as { type?: unknown } | undefined)?.type;
      if (type === "reasoning")
        return "reasoning items are not accepted: the gateway returns none and stores nothing to resolve them";
      return `must be ${itemTypes.map((each) => `"${each}"`).join(", ")}: other items are not supported`;
    },
  }),
);

type InputItem = z.output<typeof inputItemSchema>;

export const inputSchema = z
  .preprocess(
    // A string is the user's one message: one path through validation for both shapes. An empty one is
    // no message at all, refused as an empty array is (and as chat's empty `messages` is).
    (input) => {
      if (typeof input !== "string") return input;
      return input === "" ? [] : [{ role: "user", content: input }];
    },
    z
      .array(inputItemSchema, {
        error: (issue) =>
          issue.input === undefined ? "is required" : "must be a string or an array of items",
      })
      .min(1, { error: "must not be empty: give a non-empty string or at least one item" }),
  )
  .superRefine(checkItems);

/**
 * Images only in user messages and refusals only in assistant ones; every output answers an earlier call (as
 * the upstreams require).
 */
function checkItems(items: readonly InputItem[], context: z.RefinementCtx): void {
  const callIds = new Set<string>();
  items.forEach((item, index) => {
    switch (item.type) {
      case "message":
        item.content.forEach((part, partIndex) => {
          const misplaced =
            part.type === "image" && item.role !== "user"
              ? "input_image is supported only in user messages"
              : part.type === "refusal" && item.role !== "assistant"
                ? "refusal is supported only in assistant messages"
                : undefined;
          if (misplaced !== undefined)
            context.addIssue({
              code: "custom",
              path: [index, "content", partIndex, "type"],
              message: misplaced,
            });
        });
        return;
      case "function_call":
        callIds.add(item.call_id);
        return;
      case "function_call_output":
        if (!callIds.has(item.call_id))
          context.addIssue({
            code: "custom",
            path: [index, "call_id"],
            message: "answers no function_call earlier in input",
          });
        return;
      default: {
        const unknownItem: never = item;
        throw new Error(`unknown input item ${JSON.stringify(unknownItem)}`);
      }
    }
  });
}

/** The items as internal messages: a turn's calls join the assistant message before them. */
export function messagesOfInput(items: readonly InputItem[]): GenerationMessage[] {
  const messages: GenerationMessage[] = [];
  for (const item of items) {
    switch (item.type) {
      case "message":
        messages.push(messageOf(item.role, item.content));
        break;
      case "function_call": {
        const call: ToolCall = { id: item.call_id, name: item.name, arguments: item.arguments };
        const last = messages.at(-1);
        if (last?.role === "assistant") last.toolCalls.push(call);
        else messages.push({ role: "assistant", content: "", toolCalls: [call] });
        break;
      }
      case "function_call_output":
        messages.push({ role: "tool", toolCallId: item.call_id, content: joinedText(item.output) });
        break;
      default: {
        const unknownItem: never = item;
        throw new Error(`unknown input item ${JSON.stringify(unknownItem)}`);
      }
    }
  }
  return messages;
}

type MessageContent = z.output<typeof messageItemSchema>["content"];

function messageOf(role: GenerationMessage["role"], content: MessageContent): GenerationMessage {
  const parts: ContentPart[] = [];
  // Consecutive text parts are one text, as the upstream protocols concatenate them.
  for (const part of content) {
    const last = parts.at(-1);
    if (part.type === "image") parts.push(part);
    else if (last?.type === "text") last.text += wordsOf(part);
    else parts.push({ type: "text", text: wordsOf(part) });
  }
  switch (role) {
    case "user":
      return { role, content: parts.length === 0 ? [{ type: "text", text: "" }] : parts };
    case "system":
      return { role, content: joinedText(content) };
    case "assistant":
      return { role, content: joinedText(content), toolCalls: [] };
    case "tool":
      throw new Error("the tool role is not a client role");
    default: {
      const unknownRole: never = role;
      throw new Error(`unknown role ${String(unknownRole)}`);
    }
  }
}

function joinedText(parts: readonly (ContentPart | TextOrRefusalPart)[]): string {
  let text = "";
  for (const part of parts) text += wordsOf(part);
  return text;
}

type TextOrRefusalPart = { type: string; text: string } | { type: "refusal"; refusal: string };

/** A part's words: its text, or a refusal's (only in assistant messages: checkItems); an image has none. */
function wordsOf(part: ContentPart | TextOrRefusalPart): string {
  if ("refusal" in part) return part.refusal;
  return "text" in part ? part.text : "";
}
