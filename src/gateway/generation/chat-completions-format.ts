import { chatCompletionBodyOf } from "../wire/chat-completion-body";
import { parseChatCompletionsRequest } from "../wire/chat-completions-request";
import { openChatCompletionsStream } from "../wire/chat-completions-stream";
import { toGenerationRequest } from "../wire/to-generation-request";
import type { ClientFormat } from "./client-format";

export const chatCompletionsFormat: ClientFormat = {
  endpoint: "chat.completions",
  parse: parseChatCompletionsRequest,
  toGenerationRequest,
  jsonBody: chatCompletionBodyOf,
  openStream: openChatCompletionsStream,
};
