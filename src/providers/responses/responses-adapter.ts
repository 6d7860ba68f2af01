import { upstreamLimits } from "../../kernel/limits";
import { UpstreamHttpClient } from "../http/upstream-http-client";
import type { GenerationRequest, GenerationResult, GenerationStreamPart } from "../provider";
import type { UpstreamAdapter, UpstreamAdapterOptions } from "../upstream-adapter";
import { convertResponsesResponse } from "./convert-responses-response";
import { convertResponsesStream } from "./convert-responses-stream";
import { convertToResponsesRequest } from "./convert-to-responses-request";

const responsesPath = "/responses";

/** POST {baseUrl}/responses with `Authorization: Bearer`; a stream's usage is in `response.completed`. */
export class ResponsesAdapter implements UpstreamAdapter {
  readonly protocol = "responses";
  private readonly http: UpstreamHttpClient;

  constructor(options: UpstreamAdapterOptions) {
    this.http = new UpstreamHttpClient({
      baseUrl: options.baseUrl,
      credentialHeaders: { authorization: `Bearer ${options.apiKey}` },
      timeouts: options.timeouts,
      connectionsMax: options.connectionsMax ?? upstreamLimits.connectionsMaxDefault,
    });
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult> {
    const body = convertToResponsesRequest(request, { stream: false });
    const reply = await this.http.postJson(responsesPath, body, signal);
    try {
      return convertResponsesResponse(reply);
    } catch (error) {
      // A response that failed says so in the upstream's words, which may quote our key.
      throw this.http.credentialsRedacted(error);
    }
  }

  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<GenerationStreamPart[]> {
    const body = convertToResponsesRequest(request, { stream: true });
    return this.http.withoutCredentials(
      convertResponsesStream(this.http.postEventStream(responsesPath, body, signal)),
    );
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
