import { ChatCompletionsAdapter } from "./chat-completions/chat-completions-adapter";
import type { ChatCompletionsMaxTokensField } from "./chat-completions/convert-to-chat-completions-request";
import { GenerateContentAdapter } from "./generate-content/generate-content-adapter";
import { MessagesAdapter } from "./messages/messages-adapter";
import type { UpstreamProtocol } from "./provider";
import { ResponsesAdapter } from "./responses/responses-adapter";
import type { UpstreamAdapter, UpstreamAdapterOptions } from "./upstream-adapter";

export type { ChatCompletionsMaxTokensField } from "./chat-completions/convert-to-chat-completions-request";
export type { UpstreamTimeouts } from "./http/upstream-timeouts";
export type { UpstreamAdapter, UpstreamAdapterOptions } from "./upstream-adapter";

export interface CreateAdapterOptions extends UpstreamAdapterOptions {
  protocol: UpstreamProtocol;
  /** chat-completions only: the field that carries the output limit (default `max_completion_tokens`). */
  chatCompletionsMaxTokensField?: ChatCompletionsMaxTokensField;
}

/** One adapter per (upstream, protocol); each owns a keep-alive pool, so create it once and reuse it. */
export function createAdapter(options: CreateAdapterOptions): UpstreamAdapter {
  const { protocol, chatCompletionsMaxTokensField, ...upstream } = options;
  switch (protocol) {
    case "chat-completions":
      return new ChatCompletionsAdapter({ ...upstream, maxTokensField: chatCompletionsMaxTokensField });
    case "responses":
      return new ResponsesAdapter(upstream);
    case "messages":
      return new MessagesAdapter(upstream);
    case "generate-content":
      return new GenerateContentAdapter(upstream);
    default: {
      const unknownProtocol: never = protocol;
      throw new Error(`unknown upstream protocol: ${String(unknownProtocol)}`);
    }
  }
}
