import { upstreamLimits } from "../../kernel/limits";
import { UpstreamHttpClient } from "../http/upstream-http-client";
import type { GenerationRequest, GenerationResult, GenerationStreamPart } from "../provider";
import type { UpstreamAdapter, UpstreamAdapterOptions } from "../upstream-adapter";
import { convertChatCompletionsResponse } from "./convert-chat-completions-response";
import { convertChatCompletionsStream } from "./convert-chat-completions-stream";
import {
  type ChatCompletionsMaxTokensField,
  chatCompletionsMaxTokensFieldDefault,
  convertToChatCompletionsRequest,
} from "./convert-to-chat-completions-request";

export interface ChatCompletionsAdapterOptions extends UpstreamAdapterOptions {
  maxTokensField?: ChatCompletionsMaxTokensField;
}

const chatCompletionsPath = "/chat/completions";

/** POST {baseUrl}/chat/completions with `Authorization: Bearer`. */
export class ChatCompletionsAdapter implements UpstreamAdapter {
  readonly protocol = "chat-completions";
  private readonly http: UpstreamHttpClient;
  private readonly maxTokensField: ChatCompletionsMaxTokensField;

  constructor(options: ChatCompletionsAdapterOptions) {
    this.http = new UpstreamHttpClient({
      baseUrl: options.baseUrl,
      credentialHeaders: { authorization: `Bearer ${options.apiKey}` },
      timeouts: options.timeouts,
      connectionsMax: options.connectionsMax ?? upstreamLimits.connectionsMaxDefault,
    });
    this.maxTokensField = options.maxTokensField ?? chatCompletionsMaxTokensFieldDefault;
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult> {
    const body = convertToChatCompletionsRequest(request, {
      stream: false,
      maxTokensField: this.maxTokensField,
    });
    return convertChatCompletionsResponse(await this.http.postJson(chatCompletionsPath, body, signal));
  }

  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<GenerationStreamPart[]> {
    const body = convertToChatCompletionsRequest(request, {
      stream: true,
      maxTokensField: this.maxTokensField,
    });
    return this.http.withoutCredentials(
      convertChatCompletionsStream(this.http.postEventStream(chatCompletionsPath, body, signal)),
    );
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
