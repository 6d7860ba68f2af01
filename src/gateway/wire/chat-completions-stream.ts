import type { FinishReason } from "../../providers/provider";
import { type ApiError, errorBodyOf } from "../api-error";
import type { BilledUsage } from "./billed-usage";
import { chatCompletionIdOf, chatCompletionUsageOf } from "./chat-completion-body";
import { chatFinishReasonOf } from "./chat-finish-reason";
import { doneFrame, type EventStreamSink } from "./event-stream-sink";
import { assertNotClosed, type StreamWriterState } from "./stream-writer-state";
import { type ReplyIdentity, type ReplyStream, unixSecondsOf } from "./wire-reply";

/**
 * The chat-completions stream (interface.md, Events; C5): `data: <chunk>` frames, the first one's delta
 * carrying `role: "assistant"`, text chunks with no `usage` key, a last chunk with an empty delta, the finish
 * reason and `usage`, then `data: [DONE]`. A refusal streams in the delta's `refusal` field, as the protocol
 * streams one. Tool calls stream as the protocol streams them: per call, a
 * chunk with its index, id, type and name, then chunks with its index and pieces of its arguments. A failure
 * after the stream started is one error frame (the C3 error body, whose `error` key makes the official client
 * throw with its message), then `data: [DONE]`.
 *
 * A text chunk costs one JSON.stringify of the delta and one concatenation: the envelope around it is
 * serialised once per stream.
 */
export type ChatCompletionsStream = ReplyStream;

const textChunkSuffix = '},"finish_reason":null}]}\n\n';
const toolChunkSuffix = ',"finish_reason":null}]}\n\n';

export function openChatCompletionsStream(
  sink: EventStreamSink,
  identity: ReplyIdentity,
): ChatCompletionsStream {
  return new ChatCompletionsStreamWriter(sink, identity);
}

class ChatCompletionsStreamWriter implements ChatCompletionsStream {
  private state: StreamWriterState = "unopened";
  /** `data: {"id":…,"object":…,"created":…,"model":…,"choices":[` — shared by every chunk. */
  private readonly chunkPrefix: string;
  private readonly firstTextChunkPrefix: string;
  private readonly textChunkPrefix: string;

  constructor(
    private readonly sink: EventStreamSink,
    identity: ReplyIdentity,
  ) {
    const envelope = {
      id: chatCompletionIdOf(identity.createdAtMs),
      object: "chat.completion.chunk",
      created: unixSecondsOf(identity.createdAtMs),
      model: identity.model,
    };
    const serialisedEnvelope = JSON.stringify(envelope);
    this.chunkPrefix = `data: ${serialisedEnvelope.slice(0, -1)},"choices":[`;
    this.firstTextChunkPrefix = `${this.chunkPrefix}{"index":0,"delta":{"role":"assistant","content":`;
    this.textChunkPrefix = `${this.chunkPrefix}{"index":0,"delta":{"content":`;
  }

  delta(text: string): void {
    assertNotClosed(this.state, "write a delta");
    if (text === "") return;
    this.sink.write(this.textChunk(text));
  }

  /**
   * A refusal streams in its own field; when it opens the stream, its chunk also carries the role, with
   * `content: null`, as the protocol streams a reply that declines.
   */
  refusalDelta(text: string): void {
    assertNotClosed(this.state, "write a refusal");
    if (text === "") return;
    const delta =
      this.state === "unopened" ? { role: "assistant", content: null, refusal: text } : { refusal: text };
    this.state = "open";
    this.sink.write(`${this.chunkPrefix}{"index":0,"delta":${JSON.stringify(delta)}${toolChunkSuffix}`);
  }

  /**
   * A call's first chunk carries its id, type, name and empty arguments; when it opens the stream it also
   * carries the role, with `content: null`, as the protocol streams a reply that begins with a call.
   */
  toolCallStart(index: number, id: string, name: string): void {
    assertNotClosed(this.state, "start a tool call");
    const call = { index, id, type: "function", function: { name, arguments: "" } };
    const delta =
      this.state === "unopened"
        ? { role: "assistant", content: null, tool_calls: [call] }
        : { tool_calls: [call] };
    this.state = "open";
    this.sink.write(`${this.chunkPrefix}{"index":0,"delta":${JSON.stringify(delta)}${toolChunkSuffix}`);
  }

  /** Later chunks of a call carry only its index and the next piece of its arguments. */
  toolCallDelta(index: number, argumentsDelta: string): void {
    assertNotClosed(this.state, "write tool call arguments");
    if (this.state === "unopened") throw new Error(`arguments for tool call ${index}, which never started`);
    if (argumentsDelta === "") return;
    const call = `{"index":${index},"function":{"arguments":${JSON.stringify(argumentsDelta)}}}`;
    this.sink.write(`${this.chunkPrefix}{"index":0,"delta":{"tool_calls":[${call}]}${toolChunkSuffix}`);
  }

  complete(finishReason: FinishReason, usage: BilledUsage): void {
    assertNotClosed(this.state, "complete");
    // A stream with no text still opens with the assistant's role, as the official client requires of it.
    const opening = this.state === "unopened" ? this.textChunk("") : "";
    const choice = `{"index":0,"delta":{},"finish_reason":"${chatFinishReasonOf(finishReason)}"}`;
    const usageJson = JSON.stringify(chatCompletionUsageOf(usage));
    this.close(`${opening}${this.chunkPrefix}${choice}],"usage":${usageJson}}\n\n`);
  }

  fail(error: ApiError): void {
    assertNotClosed(this.state, "fail");
    const body = errorBodyOf(error);
    this.close(
      `data: ${JSON.stringify({ error: body.error, status: body.status, message: body.message })}\n\n`,
    );
  }

  /** The first chunk of the stream carries the role; every later one only content. */
  private textChunk(text: string): string {
    const prefix = this.state === "unopened" ? this.firstTextChunkPrefix : this.textChunkPrefix;
    this.state = "open";
    return prefix + JSON.stringify(text) + textChunkSuffix;
  }

  private close(lastFrames: string): void {
    this.state = "closed";
    this.sink.write(lastFrames + doneFrame);
    this.sink.end();
  }
}
