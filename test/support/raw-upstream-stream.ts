/**
 * An upstream's stream as raw HTTP, for a faulty upstream (faulty-upstream.ts) to send piece by piece: its
 * head, chunks of a chunked body, and the events of the messages protocol.
 */

export const streamHead =
  "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/** One chunk of a chunked body. */
export function chunkOf(events: string): string {
  return `${Buffer.byteLength(events).toString(16)}\r\n${events}\r\n`;
}

/** One server-sent event of the messages protocol. */
export function messagesEvent(type: string, fields: object): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
}

export type MessagesInputUsage = {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
};

/** A messages stream's start, as an upstream writes it: its head, `message_start` reporting `usage`, a first text. */
export function messagesStreamStart(text: string, usage: MessagesInputUsage): string[] {
  const message = {
    id: "msg_cut",
    type: "message",
    role: "assistant",
    content: [],
    usage: { ...usage, output_tokens: 1 },
  };
  return [
    streamHead +
      chunkOf(
        messagesEvent("message_start", { message }) +
          messagesEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      ),
    chunkOf(messagesEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
  ];
}
