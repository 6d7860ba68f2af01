import { createServer } from "node:net";
import { textMessage } from "../../../src/providers/message-text";
import type { GenerationRequest, GenerationStreamPart } from "../../../src/providers/provider";

/** Every part of a stream, or the parts before its error together with the error. */
export async function collectStream(
  stream: AsyncIterable<readonly GenerationStreamPart[]>,
): Promise<{ parts: GenerationStreamPart[]; error: unknown }> {
  const parts: GenerationStreamPart[] = [];
  try {
    for await (const batch of stream) {
      // The adapter contract: a batch is never empty.
      if (batch.length === 0) throw new Error("the stream yielded an empty batch");
      parts.push(...batch);
    }
  } catch (error) {
    return { parts, error };
  }
  return { parts, error: undefined };
}

export function textOf(parts: readonly GenerationStreamPart[]): string {
  return parts.map((part) => (part.type === "text-delta" ? part.text : "")).join("");
}

export function deltaCount(parts: readonly GenerationStreamPart[]): number {
  return parts.filter((part) => part.type === "text-delta").length;
}

/** A URL on which nothing listens: a port that was free a moment ago and has been released. */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${address.port}`;
}

export function neverAborted(): AbortSignal {
  return new AbortController().signal;
}

export const simpleRequest: GenerationRequest = {
  upstreamModelId: "test-model",
  messages: [
    { role: "system", content: "Answer briefly." },
    textMessage("user", "Describe a quiet harbor at dawn."),
  ],
};

/** Splits bytes into pieces of the given sizes, cycling, to cut text at awkward places. */
export function* chunked(bytes: Uint8Array, sizes: readonly number[]): Generator<Uint8Array> {
  let offset = 0;
  let index = 0;
  while (offset < bytes.length) {
    const size = sizes[index % sizes.length]!;
    yield bytes.subarray(offset, offset + size);
    offset += size;
    index += 1;
  }
}

export async function* asAsync<T>(items: Iterable<T>): AsyncGenerator<T> {
  for (const item of items) yield item;
}
