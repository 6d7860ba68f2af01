import type { CatalogModel } from "../../providers/catalog";
import type { GenerationRequest } from "../../providers/provider";
import type { BilledUsage } from "../wire/billed-usage";
import type { ChatCompletionsStream } from "../wire/chat-completions-stream";
import type { EventStreamSink } from "../wire/event-stream-sink";
import type { ParsedGenerationRequest } from "../wire/parsed-generation-request";
import type { CompletedReply, ReplyIdentity } from "../wire/wire-reply";

/**
 * What differs between the two client wire formats (chat completions, responses); the generation flow
 * itself is shared.
 */

export type ClientUsage = BilledUsage;
/** Both formats' stream writers have the same three moves: delta, complete, fail. */
export type ClientStream = ChatCompletionsStream;

export interface ClientFormat {
  readonly endpoint: "chat.completions" | "responses";
  parse(body: unknown): ParsedGenerationRequest;
  toGenerationRequest(parsed: ParsedGenerationRequest, model: CatalogModel): GenerationRequest;
  jsonBody(reply: CompletedReply): unknown;
  openStream(sink: EventStreamSink, identity: ReplyIdentity): ClientStream;
}
