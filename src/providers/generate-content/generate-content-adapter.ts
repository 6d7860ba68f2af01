import { upstreamLimits } from "../../kernel/limits";
import { UpstreamHttpClient } from "../http/upstream-http-client";
import type { GenerationRequest, GenerationResult, GenerationStreamPart } from "../provider";
import type { UpstreamAdapter, UpstreamAdapterOptions } from "../upstream-adapter";
import { convertGenerateContentResponse } from "./convert-generate-content-response";
import { convertGenerateContentStream } from "./convert-generate-content-stream";
import { convertToGenerateContentRequest } from "./convert-to-generate-content-request";

function modelPath(upstreamModelId: string, method: "generateContent" | "streamGenerateContent"): string {
  return `/v1beta/models/${encodeURIComponent(upstreamModelId)}:${method}`;
}

/**
 * POST {baseUrl}/v1beta/models/{model}:generateContent, and `:streamGenerateContent?alt=sse` for a
 * stream (without `alt=sse` the protocol streams one JSON array instead of events), with `x-goog-api-key`.
 */
export class GenerateContentAdapter implements UpstreamAdapter {
  readonly protocol = "generate-content";
  private readonly http: UpstreamHttpClient;

  constructor(options: UpstreamAdapterOptions) {
    this.http = new UpstreamHttpClient({
      baseUrl: options.baseUrl,
      credentialHeaders: { "x-goog-api-key": options.apiKey },
      timeouts: options.timeouts,
      connectionsMax: options.connectionsMax ?? upstreamLimits.connectionsMaxDefault,
    });
  }

  async generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult> {
    const path = modelPath(request.upstreamModelId, "generateContent");
    const reply = await this.http.postJson(path, convertToGenerateContentRequest(request), signal);
    return convertGenerateContentResponse(reply);
  }

  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<GenerationStreamPart[]> {
    const path = `${modelPath(request.upstreamModelId, "streamGenerateContent")}?alt=sse`;
    const events = this.http.postEventStream(path, convertToGenerateContentRequest(request), signal);
    return this.http.withoutCredentials(convertGenerateContentStream(events));
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
