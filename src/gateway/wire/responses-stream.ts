import type { FinishReason } from "../../providers/provider";
import { type ApiError, errorBodyOf } from "../api-error";
import type { BilledUsage } from "./billed-usage";
import { doneFrame, type EventStreamSink } from "./event-stream-sink";
import {
  createdResponseBodyOf,
  failedResponseBodyOf,
  inProgressResponseBodyOf,
  messageItemOf,
  outputTextPartOf,
  type ResponseIds,
  responseBodyOf,
  responseIdsOf,
} from "./response-body";
import { assertNotClosed, type StreamWriterState } from "./stream-writer-state";
import type { ReplyIdentity, ReplyStream } from "./wire-reply";

/**
 * The responses stream (interface.md "Responses stream", C5): `event: <name>` + `data: <JSON>` pairs whose
 * JSON starts with `type` (the name) and `sequence_number` (from 0, one per event), in the table's order —
 * created, in_progress, output_item.added, content_part.added, output_text.delta × n, output_text.done,
 * content_part.done, output_item.done, completed — then `data: [DONE]` with no event line.
 *
 * A failure after the stream started is one `response.failed` event, then `data: [DONE]`. Its response has
 * status "failed" and `error` { code, message }; beside it the event carries the C3 error body (`error`,
 * `status`, `message`), whose `error` key makes the official client throw with the message instead of
 * finishing as if the partial text were the whole answer.
 *
 * The four opening events go out with the first call. A delta costs one JSON.stringify of its text: the
 * rest of the event is serialised once per stream.
 */
export type ResponsesStream = ReplyStream;

export function openResponsesStream(sink: EventStreamSink, identity: ReplyIdentity): ResponsesStream {
  return new ResponsesStreamWriter(sink, identity);
}

const outputTextDelta = "response.output_text.delta";

/** The one output item and its one content part: every event about them names these positions. */
const partPosition = { output_index: 0, content_index: 0 } as const;

class ResponsesStreamWriter implements ResponsesStream {
  private state: StreamWriterState = "unopened";
  private nextSequenceNumber = 0;
  /** Everything sent as deltas: the done events and the final body repeat it whole. */
  private text = "";
  private readonly ids: ResponseIds;
  private readonly deltaPrefix: string;
  private readonly deltaInfix: string;

  constructor(
    private readonly sink: EventStreamSink,
    private readonly identity: ReplyIdentity,
  ) {
    this.ids = responseIdsOf(identity.createdAtMs);
    this.deltaPrefix = `event: ${outputTextDelta}\ndata: {"type":"${outputTextDelta}","sequence_number":`;
    const { responseId, itemId } = this.ids;
    this.deltaInfix = `,"response_id":${JSON.stringify(responseId)},"item_id":${JSON.stringify(itemId)},"output_index":0,"content_index":0,"delta":`;
  }

  delta(text: string): void {
    assertNotClosed(this.state, "write a delta");
    if (text === "") return;
    const opening = this.opening();
    this.text += text;
    const sequenceNumber = this.nextSequenceNumber++;
    this.sink.write(
      `${opening}${this.deltaPrefix}${sequenceNumber}${this.deltaInfix}${JSON.stringify(text)}}\n\n`,
    );
  }

  toolCallStart(_index: number, _id: string, _name: string): void {
    throw new Error("streamed tool calls are not written in this format yet");
  }

  toolCallDelta(_index: number, _argumentsDelta: string): void {
    throw new Error("streamed tool calls are not written in this format yet");
  }

  complete(finishReason: FinishReason, usage: BilledUsage): void {
    assertNotClosed(this.state, "complete");
    const opening = this.opening();
    const { responseId, itemId } = this.ids;
    const part = { response_id: responseId, item_id: itemId, ...partPosition };
    const fullPart = outputTextPartOf(this.text);
    const closing =
      this.event("response.output_text.done", { ...part, text: this.text }) +
      this.event("response.content_part.done", { ...part, part: fullPart }) +
      this.event("response.output_item.done", {
        response_id: responseId,
        output_index: 0,
        item: messageItemOf(itemId, "completed", [fullPart]),
      }) +
      this.event("response.completed", {
        response: responseBodyOf({ ...this.identity, text: this.text, toolCalls: [], finishReason, usage }),
      });
    this.close(opening + closing);
  }

  fail(error: ApiError): void {
    assertNotClosed(this.state, "fail");
    const opening = this.opening();
    const body = errorBodyOf(error);
    const failed = this.event("response.failed", {
      response: failedResponseBodyOf(this.identity, this.text, error),
      error: body.error,
      status: body.status,
      message: body.message,
    });
    this.close(opening + failed);
  }

  /** The four events that open the stream, the first time anything is written; "" afterwards. */
  private opening(): string {
    if (this.state !== "unopened") return "";
    this.state = "open";
    const { responseId, itemId } = this.ids;
    return (
      this.event("response.created", { response: createdResponseBodyOf(this.identity) }) +
      this.event("response.in_progress", {
        response_id: responseId,
        response: inProgressResponseBodyOf(this.identity),
      }) +
      this.event("response.output_item.added", {
        response_id: responseId,
        output_index: 0,
        item: messageItemOf(itemId, "in_progress", []),
      }) +
      this.event("response.content_part.added", {
        response_id: responseId,
        item_id: itemId,
        ...partPosition,
        part: outputTextPartOf(""),
      })
    );
  }

  /** Events other than deltas: a few per stream, so plain serialisation is cheap enough. */
  private event(name: string, fields: Record<string, unknown>): string {
    const data = { type: name, sequence_number: this.nextSequenceNumber++, ...fields };
    return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  }

  private close(lastEvents: string): void {
    this.state = "closed";
    this.sink.write(lastEvents + doneFrame);
    this.sink.end();
  }
}
