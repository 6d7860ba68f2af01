import { parseUpstreamReply } from "../http/upstream-reply";
import type { GenerationResult } from "../provider";
import { chatCompletionSchema } from "./chat-completions-schemas";
import { convertChatCompletionsUsage } from "./convert-chat-completions-usage";
import { mapChatCompletionsFinishReason } from "./map-chat-completions-finish-reason";

/** A JSON chat completion to the gateway's result. The gateway never asks for n > 1, so choice 0 is all. */
export function convertChatCompletionsResponse(reply: unknown): GenerationResult {
  const completion = parseUpstreamReply(chatCompletionSchema, reply);
  const choice = completion.choices[0]!;
  return {
    // Content is null when the model refused or called a tool; either way there is no text.
    text: choice.message.content ?? "",
    ...(choice.message.refusal ? { refusal: choice.message.refusal } : {}),
    toolCalls: (choice.message.tool_calls ?? []).map((call) => ({
      id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
    })),
    finishReason: choice.finish_reason ? mapChatCompletionsFinishReason(choice.finish_reason) : "other",
    usage: completion.usage ? convertChatCompletionsUsage(completion.usage) : null,
  };
}
