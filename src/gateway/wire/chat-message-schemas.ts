import { z } from "zod";
import type { ContentPart, GenerationMessage, ImageSource, ToolCall } from "../../providers/provider";
import { apiErrors } from "../api-error";
import { closedObjectSchema } from "./closed-object-schema";
import { readImageUrl } from "./image-url";
import { textContentSchema } from "./message-schemas";

/**
 * The chat-completions messages: system (or developer), user with text and image parts, assistant with text
 * (or the words with which it declined) and the tool calls it made, and tool results answering those calls
 * by id. Each becomes one internal message; a conversation whose tool results and calls do not pair up is
 * refused, as the protocol itself refuses it, so that every upstream (some name a result by its call's
 * function) receives a whole exchange.
 */

const imageDetails = ["auto", "low", "high"] as const;

const textPartSchema = z.object({
  type: z.literal("text"),
  text: z.string({ error: "must be a string" }),
});

const imagePartSchema = z.object({
  type: z.literal("image_url"),
  image_url: z.object(
    {
      url: z.string({ error: "must be a string" }).transform((url, context) => {
        const reading = readImageUrl(url);
        if (reading.ok) return reading.image;
        context.addIssue({ code: "custom", message: reading.message });
        return z.NEVER;
      }),
      detail: z.enum(imageDetails, { error: 'must be "auto", "low" or "high"' }).nullish(),
    },
    { error: "must be an object with url" },
  ),
});

const userPartSchema = z.discriminatedUnion("type", [textPartSchema, imagePartSchema], {
  error: (issue) =>
    issue.code === "invalid_union"
      ? 'must be "text" or "image_url": only text and image content is supported'
      : "must be a content part object",
});

/** Consecutive text parts are one text, as the protocols concatenate them; images keep their place. */
const userContentSchema = z
  .preprocess(
    (content) => (typeof content === "string" ? [{ type: "text", text: content }] : content),
    z.array(userPartSchema, { error: "must be a string or an array of text and image_url parts" }),
  )
  .transform((parts) => {
    const content: ContentPart[] = [];
    for (const part of parts) {
      const previous = content.at(-1);
      if (part.type === "text" && previous?.type === "text") previous.text += part.text;
      else if (part.type === "text") content.push({ type: "text", text: part.text });
      else content.push(imageContentOf(part.image_url.url, part.image_url.detail ?? undefined));
    }
    return content;
  });

function imageContentOf(image: ImageSource, detail: (typeof imageDetails)[number] | undefined): ContentPart {
  return detail === undefined ? { type: "image", image } : { type: "image", image, detail };
}

const toolCallSchema = z.object(
  {
    id: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
    type: z.literal("function", { error: 'must be "function": only function tool calls are supported' }),
    function: z.object(
      {
        name: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
        // The JSON text as the model produced it, echoed back: not parsed, since a model's may be invalid.
        arguments: z.string({ error: "must be a string" }),
      },
      { error: "must be an object with name and arguments" },
    ),
  },
  { error: "must be an object with id, type and function" },
);

/**
 * A message's fields are closed (C12: a field the gateway would drop unread is refused, naming it), but for
 * what a client echoes back when it sends a reply's message on as the next turn's history: the protocol's
 * reply fields and the official client's parsed output. They say nothing to the model; they are accepted
 * and not sent on. A reply's `refusal` is the exception: it is what the model said (assistantWordsOf).
 */
const unknownMessageField = "is not a field of a message the gateway serves";
/** Carried to the upstreams whose protocol has it; refused for the others (to-generation-request.ts). */
const participantName = z
  .string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .nullish();
const echoedReplyFields = {
  annotations: z.unknown().optional(),
  audio: z.unknown().optional(),
  function_call: z.unknown().optional(),
  parsed: z.unknown().optional(),
};

const systemMessageSchema = closedObjectSchema(
  { role: z.enum(["system", "developer"]), content: textContentSchema(["text"]), name: participantName },
  { error: "must be an object with role and content", unknownField: unknownMessageField },
);

const userMessageSchema = closedObjectSchema(
  { role: z.literal("user"), content: userContentSchema, name: participantName },
  { error: "must be an object with role and content", unknownField: unknownMessageField },
);

/**
 * A turn where the model declined is sent back as the gateway answered it — `refusal` beside null content —
 * or with the protocol's refusal parts in its content. The refusal is what the assistant said, so the
 * upstream reads it as the turn's text: no upstream protocol takes a refusal as input, and some refuse an
 * empty assistant turn.
 */
const assistantPartSchema = z.discriminatedUnion(
  "type",
  [
    textPartSchema,
    z.object({ type: z.literal("refusal"), refusal: z.string({ error: "must be a string" }) }),
  ],
  {
    error: (issue) =>
      issue.code === "invalid_union"
        ? 'must be "text" or "refusal": only text content is supported'
        : "must be a content part object",
  },
);

const assistantContentSchema = z
  .preprocess(
    (content) => (typeof content === "string" ? [{ type: "text", text: content }] : content),
    z.array(assistantPartSchema, { error: "must be a string or an array of text and refusal parts" }),
  )
  .transform((parts) => parts.map((part) => (part.type === "text" ? part.text : part.refusal)).join(""));

const assistantMessageSchema = closedObjectSchema(
  {
    role: z.literal("assistant"),
    // Null (or absent) when the turn was only tool calls or a refusal, as the protocol's replies show it.
    content: assistantContentSchema.nullish(),
    refusal: z.string({ error: "must be a string" }).nullish(),
    tool_calls: z.array(toolCallSchema, { error: "must be an array of tool calls" }).nullish(),
    name: participantName,
    ...echoedReplyFields,
  },
  { error: "must be an object with role and content", unknownField: unknownMessageField },
).superRefine((message, context) => {
  if (message.content == null && message.refusal == null && (message.tool_calls ?? []).length === 0)
    context.addIssue({
      code: "custom",
      path: ["content"],
      message: "must be a string or an array of text parts unless the message has tool_calls or a refusal",
    });
});

/** The assistant's words: its text, then its refusal (a reply shows both when the model wrote both). */
function assistantWordsOf(message: { content?: string | null; refusal?: string | null }): string {
  return (message.content ?? "") + (message.refusal ?? "");
}

const toolMessageSchema = closedObjectSchema(
  {
    role: z.literal("tool"),
    tool_call_id: z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }),
    content: textContentSchema(["text"]),
  },
  { error: "must be an object with role, tool_call_id and content", unknownField: unknownMessageField },
);

const chatRoles = ["system", "developer", "user", "assistant", "tool"];

const chatMessageSchema = z
  .discriminatedUnion(
    "role",
    [systemMessageSchema, userMessageSchema, assistantMessageSchema, toolMessageSchema],
    {
      error: (issue) =>
        issue.code === "invalid_union"
          ? `must be one of ${chatRoles.map((role) => `"${role}"`).join(", ")}`
          : "must be an object with role and content",
    },
  )
  .transform((message): GenerationMessage => {
    const named = message.role !== "tool" && message.name != null ? { name: message.name } : {};
    switch (message.role) {
      case "system":
      case "developer":
        return { role: "system", content: message.content, ...named };
      case "user":
        return { role: "user", content: message.content, ...named };
      case "assistant":
        return {
          ...named,
          role: "assistant",
          content: assistantWordsOf(message),
          toolCalls: (message.tool_calls ?? []).map(
            (call): ToolCall => ({
              id: call.id,
              name: call.function.name,
              arguments: call.function.arguments,
            }),
          ),
        };
      case "tool":
        return { role: "tool", toolCallId: message.tool_call_id, content: message.content };
      default: {
        const unknownMessage: never = message;
        throw new Error(`unknown message ${JSON.stringify(unknownMessage)}`);
      }
    }
  });

export const chatMessagesSchema = z
  .array(chatMessageSchema, {
    error: (issue) => (issue.input === undefined ? "is required" : "must be an array of messages"),
  })
  .min(1, { error: "must contain at least one message" });

/**
 * Every tool result answers a call of the assistant turn before it, and every call is answered before the
 * conversation goes on: the rule the protocol enforces, and the one every upstream's tool turns rely on.
 * Checked once every message has parsed, so it reads internal messages only.
 */
export function assertToolExchangesComplete(messages: readonly GenerationMessage[]): void {
  const issue = toolExchangeIssueOf(messages);
  if (issue) throw apiErrors.validation(`messages.${issue.path.join(".")}: ${issue.message}`);
}

function toolExchangeIssueOf(
  messages: readonly GenerationMessage[],
): { path: (string | number)[]; message: string } | undefined {
  let unanswered = new Set<string>();
  let callsAt = -1;
  for (const [index, message] of messages.entries()) {
    if (message.role === "tool") {
      if (!unanswered.delete(message.toolCallId))
        return {
          path: [index, "tool_call_id"],
          message: "must answer a tool call of the assistant message just before the tool messages",
        };
      continue;
    }
    if (unanswered.size > 0) return unansweredIssue(callsAt, unanswered);
    if (message.role === "assistant") {
      unanswered = new Set(message.toolCalls.map((call) => call.id));
      callsAt = index;
    }
  }
  // Calls the conversation ends on are unanswered too: the model would be asked to continue mid-exchange.
  return unanswered.size > 0 ? unansweredIssue(callsAt, unanswered) : undefined;
}

function unansweredIssue(callsAt: number, unanswered: ReadonlySet<string>) {
  const [first] = unanswered;
  return {
    path: [callsAt, "tool_calls"],
    message: `tool call ${JSON.stringify(first)} has no tool message answering it`,
  };
}
