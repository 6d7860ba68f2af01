import { chatCompletionBodyOf } from "../wire/chat-completion-body";
import { chatCompletionsParameterNames, parseChatCompletionsRequest } from "../wire/chat-completions-request";
import { openChatCompletionsStream } from "../wire/chat-completions-stream";
import { toGenerationRequest } from "../wire/to-generation-request";
import type { ClientFormat } from "./client-format";

export const chatCompletionsFormat: ClientFormat = {
  endpoint: "chat.completions",
  parse: parseChatCompletionsRequest,
  toGenerationRequest: (parsed, model) => toGenerationRequest(parsed, model, chatCompletionsParameterNames),
  jsonBody: chatCompletionBodyOf,
  openStream: openChatCompletionsStream,
};
