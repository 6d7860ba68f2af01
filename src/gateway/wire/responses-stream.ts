import type { FinishReason, ToolCall } from "../../providers/provider";
import { type ApiError, errorBodyOf } from "../api-error";
import type { BilledUsage } from "./billed-usage";
import { doneFrame, type EventStreamSink } from "./event-stream-sink";
import {
  createdResponseBodyOf,
  failedResponseBodyOf,
  finishedResponseBodyOf,
  functionCallItemIdOf,
  functionCallItemOf,
  inProgressResponseBodyOf,
  type MessagePart,
  messageItemOf,
  type OutputItem,
  outputTextPartOf,
  refusalPartOf,
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
 * Function calls are output items of their own, after the message, as the protocol streams them: each is
 * `output_item.added` (arguments ""), `function_call_arguments.delta` × n, `function_call_arguments.done`,
 * `output_item.done`. One item is open at a time: the next item's start closes the one before, so every
 * item's events are contiguous, in output_index order. Text after a call (no upstream is known to send it)
 * opens a message item of its own rather than reopen a closed one. A refusal is a message item whose one part
 * is a `refusal`: `content_part.added`, `response.refusal.delta` × n, `response.refusal.done`,
 * `content_part.done`, as the protocol streams one.
 *
 * A failure after the stream started is one `response.failed` event, then `data: [DONE]`. Its response has
 * status "failed" and `error` { code, message }; beside it the event carries the C3 error body (`error`,
 * `status`, `message`), whose `error` key makes the official client throw with the message instead of
 * finishing as if the partial text were the whole answer.
 *
 * The opening events go out with the first call. A text delta costs one JSON.stringify of its text: the
 * rest of the event is serialised once per message item.
 */
export type ResponsesStream = ReplyStream;

export function openResponsesStream(sink: EventStreamSink, identity: ReplyIdentity): ResponsesStream {
  return new ResponsesStreamWriter(sink, identity);
}

const outputTextDelta = "response.output_text.delta";

interface StreamedMessage {
  kind: "message";
  id: string;
  outputIndex: number;
  /** Its one part: text, or the model's refusal (a message of its own, as the protocol streams one). */
  part: MessagePart["type"];
  /** The part's text so far: the output text, or the refusal's words. */
  text: string;
  /** `…,"delta":` of this item's text deltas, less the sequence number before it. */
  deltaInfix: string;
}

interface StreamedCall {
  kind: "call";
  id: string;
  outputIndex: number;
  call: ToolCall;
}

type StreamedItem = StreamedMessage | StreamedCall;

class ResponsesStreamWriter implements ResponsesStream {
  private state: StreamWriterState = "unopened";
  private nextSequenceNumber = 0;
  /** Everything sent as text deltas, in every message item: the final body's `output_text`. */
  private text = "";
  private readonly items: StreamedItem[] = [];
  /** The item whose events are being written; undefined before the first and once it is closed. */
  private openItem: StreamedItem | undefined;
  /** The reply's calls by their index among its calls. */
  private readonly calls = new Map<number, StreamedCall>();
  private readonly responseId: string;
  private readonly deltaPrefix: string;

  constructor(
    private readonly sink: EventStreamSink,
    private readonly identity: ReplyIdentity,
  ) {
    this.responseId = responseIdsOf(identity.createdAtMs).responseId;
    this.deltaPrefix = `event: ${outputTextDelta}\ndata: {"type":"${outputTextDelta}","sequence_number":`;
  }

  delta(text: string): void {
    assertNotClosed(this.state, "write a delta");
    if (text === "") return;
    const opening = this.opening("text");
    const message =
      this.openItem?.kind === "message" && this.openItem.part === "output_text"
        ? { item: this.openItem, events: "" }
        : this.openMessage("output_text");
    message.item.text += text;
    this.text += text;
    const sequenceNumber = this.nextSequenceNumber++;
    this.sink.write(
      `${opening}${message.events}${this.deltaPrefix}${sequenceNumber}${message.item.deltaInfix}${JSON.stringify(text)}}\n\n`,
    );
  }

  /** `response.refusal.delta` events in a message item whose one part is the refusal. */
  refusalDelta(text: string): void {
    assertNotClosed(this.state, "write a refusal");
    if (text === "") return;
    const opening = this.opening("refusal");
    const message =
      this.openItem?.kind === "message" && this.openItem.part === "refusal"
        ? { item: this.openItem, events: "" }
        : this.openMessage("refusal");
    message.item.text += text;
    this.sink.write(
      opening +
        message.events +
        this.event("response.refusal.delta", { ...this.partPosition(message.item), delta: text }),
    );
  }

  toolCallStart(index: number, id: string, name: string): void {
    assertNotClosed(this.state, "start a tool call");
    if (this.calls.has(index)) throw new Error(`tool call ${index} started twice`);
    const opening = this.opening("call");
    const closing = this.closeOpenItem();
    const item: StreamedCall = {
      kind: "call",
      id: functionCallItemIdOf(this.identity.createdAtMs, index),
      outputIndex: this.items.length,
      call: { id, name, arguments: "" },
    };
    this.items.push(item);
    this.calls.set(index, item);
    this.openItem = item;
    this.sink.write(
      opening +
        closing +
        this.event("response.output_item.added", {
          response_id: this.responseId,
          output_index: item.outputIndex,
          item: functionCallItemOf(item.id, item.call, "in_progress"),
        }),
    );
  }

  toolCallDelta(index: number, argumentsDelta: string): void {
    assertNotClosed(this.state, "write tool call arguments");
    const item = this.calls.get(index);
    if (!item) throw new Error(`arguments for tool call ${index}, which never started`);
    // Adapters pass each call whole before the next starts; a closed item's events were already final.
    if (item !== this.openItem) throw new Error(`arguments for tool call ${index} after it was closed`);
    if (argumentsDelta === "") return;
    item.call.arguments += argumentsDelta;
    this.sink.write(
      this.event("response.function_call_arguments.delta", {
        response_id: this.responseId,
        item_id: item.id,
        output_index: item.outputIndex,
        delta: argumentsDelta,
      }),
    );
  }

  complete(finishReason: FinishReason, usage: BilledUsage): void {
    assertNotClosed(this.state, "complete");
    // A reply with neither text nor calls still shows its (empty) message, as interface.md's table does:
    // the opening opens it.
    let events = this.opening("text");
    events += this.closeOpenItem();
    const output = this.items.map((item) => outputItemOf(item, "completed"));
    events += this.event("response.completed", {
      response: finishedResponseBodyOf({ ...this.identity, text: this.text, finishReason, usage }, output),
    });
    this.close(events);
  }

  fail(error: ApiError): void {
    assertNotClosed(this.state, "fail");
    const opening = this.opening("text");
    const body = errorBodyOf(error);
    // The item being written when the failure came will not be completed; those before it were.
    const output = this.items.map((item) =>
      outputItemOf(item, item === this.openItem ? "incomplete" : "completed"),
    );
    const failed = this.event("response.failed", {
      response: failedResponseBodyOf(this.identity, this.text, error, output),
      error: body.error,
      status: body.status,
      message: body.message,
    });
    this.close(opening + failed);
  }

  /**
   * The events that open the stream, the first time anything is written; "" afterwards. A reply that opens
   * with text (or is completed or failed with none) also opens its message item here, as interface.md's
   * table shows; one that opens with a call opens nothing more.
   */
  private opening(opensWith: "text" | "call" | "refusal"): string {
    if (this.state !== "unopened") return "";
    this.state = "open";
    const events =
      this.event("response.created", { response: createdResponseBodyOf(this.identity, opensWith) }) +
      this.event("response.in_progress", {
        response_id: this.responseId,
        response: inProgressResponseBodyOf(this.identity),
      });
    if (opensWith === "call") return events;
    return events + this.openMessage(opensWith === "text" ? "output_text" : "refusal").events;
  }

  /** A new message item and its one part (text or refusal), after closing the item before it. */
  private openMessage(part: MessagePart["type"]): { item: StreamedMessage; events: string } {
    const closing = this.closeOpenItem();
    const outputIndex = this.items.length;
    const { itemId } = responseIdsOf(this.identity.createdAtMs);
    // The first message item has the id of interface.md; a later one (text after a call) is told apart.
    const id = outputIndex === 0 ? itemId : `${itemId}${outputIndex}`;
    const position = `"response_id":${JSON.stringify(this.responseId)},"item_id":${JSON.stringify(id)},"output_index":${outputIndex},"content_index":0`;
    const item: StreamedMessage = {
      kind: "message",
      id,
      outputIndex,
      part,
      text: "",
      deltaInfix: `,${position},"delta":`,
    };
    this.items.push(item);
    this.openItem = item;
    const events =
      closing +
      this.event("response.output_item.added", {
        response_id: this.responseId,
        output_index: outputIndex,
        item: messageItemOf(id, "in_progress", []),
      }) +
      this.event("response.content_part.added", { ...this.partPosition(item), part: partOf(item) });
    return { item, events };
  }

  /** The done events of the open item, if any: its text or arguments whole, then the completed item. */
  private closeOpenItem(): string {
    const item = this.openItem;
    if (!item) return "";
    this.openItem = undefined;
    // Serialised in the order sent: each event takes the next sequence number.
    let events: string;
    if (item.kind === "call") {
      events = this.event("response.function_call_arguments.done", {
        response_id: this.responseId,
        item_id: item.id,
        output_index: item.outputIndex,
        arguments: item.call.arguments,
        name: item.call.name,
      });
    } else {
      const position = this.partPosition(item);
      events =
        (item.part === "refusal"
          ? this.event("response.refusal.done", { ...position, refusal: item.text })
          : this.event("response.output_text.done", { ...position, text: item.text })) +
        this.event("response.content_part.done", { ...position, part: partOf(item) });
    }
    return (
      events +
      this.event("response.output_item.done", {
        response_id: this.responseId,
        output_index: item.outputIndex,
        item: outputItemOf(item, "completed"),
      })
    );
  }

  private partPosition(item: StreamedMessage) {
    return {
      response_id: this.responseId,
      item_id: item.id,
      output_index: item.outputIndex,
      content_index: 0,
    };
  }

  /** Events other than text deltas: a few per item, so plain serialisation is cheap enough. */
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

function outputItemOf(item: StreamedItem, status: "completed" | "incomplete"): OutputItem {
  return item.kind === "message"
    ? messageItemOf(item.id, status, [partOf(item)])
    : functionCallItemOf(item.id, item.call, status);
}

function partOf(message: StreamedMessage): MessagePart {
  return message.part === "refusal" ? refusalPartOf(message.text) : outputTextPartOf(message.text);
}
