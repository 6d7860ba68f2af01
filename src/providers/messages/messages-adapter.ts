import { upstreamLimits } from "../../kernel/limits";
import { UpstreamHttpClient } from "../http/upstream-http-client";
import type { GenerationRequest, GenerationResult, GenerationStreamPart } from "../provider";
import type { UpstreamAdapter, UpstreamAdapterOptions } from "../upstream-adapter";
import { convertMessagesResponse } from "./convert-messages-response";
import { convertMessagesStream } from "./convert-messages-stream";
import { convertToMessagesRequest } from "./convert-to-messages-request";

const messagesPath = "/v1/messages";
/** The protocol version whose request and event shapes this adapter speaks. */
const messagesProtocolVersion = "2023-06-01";

/** POST {baseUrl}/v1/messages with `x-api-key` and `anthropic-version`. */
export class MessagesAdapter implements UpstreamAdapter {
  readonly protocol = "messages";
  private readonly http: UpstreamHttpClient;

  constructor(options: UpstreamAdapterOptions) {
    this.http = new UpstreamHttpClient({
      baseUrl: options.baseUrl,
      credentialHeaders: { "x-api-key": options.apiKey },
      protocolHeaders: { "anthropic-version": messagesProtocolVersion },
      timeouts: options.timeouts,
      connectionsMax: options.connectionsMax ?? upstreamLimits.connectionsMaxDefault,
    });
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult> {
    const { body, answerToolName } = convertToMessagesRequest(request, { stream: false });
    return convertMessagesResponse(await this.http.postJson(messagesPath, body, signal), { answerToolName });
  }

  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<GenerationStreamPart[]> {
    const { body, answerToolName } = convertToMessagesRequest(request, { stream: true });
    return this.http.withoutCredentials(
      convertMessagesStream(this.http.postEventStream(messagesPath, body, signal), { answerToolName }),
    );
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
