import { Agent, createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../../src/gateway/api-error";
import { readJsonBody } from "../../../src/gateway/http/request-body";

/** The lean edge's body reader against a real node:http server: what it parses, and what it refuses. */

const bytesMax = 1_024;

describe("readJsonBody", () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      readJsonBody(request, bytesMax).then(
        (body) => response.end(JSON.stringify({ parsed: body === undefined ? "nothing" : body })),
        (error: unknown) => {
          response.statusCode = error instanceof ApiError ? error.httpStatus : 500;
          response.end(JSON.stringify({ refused: (error as Error).message }));
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const send = async (body: RequestInit["body"], headers: Record<string, string>) => {
    const response = await fetch(url, { method: "POST", headers, body, duplex: "half" } as RequestInit);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const json = { "content-type": "application/json" };

  it("parses JSON under the JSON media types, with or without a UTF-8 charset", async () => {
    for (const contentType of [
      "application/json",
      "application/json; charset=utf-8",
      'application/json;charset="UTF-8"',
      "application/vnd.api+json",
    ]) {
      expect(await send('{"a":1}', { "content-type": contentType })).toEqual({
        status: 200,
        body: { parsed: { a: 1 } },
      });
    }
  });

  it("refuses a body of another media type, or of none, naming the header to send; no body is undefined", async () => {
    for (const headers of [
      { "content-type": "text/plain" },
      { "content-type": "application/x-www-form-urlencoded" },
    ]) {
      const refused = await send('{"a":1}', headers);
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain("Content-Type: application/json");
    }
    expect((await send(undefined, json)).body).toEqual({ parsed: "nothing" });
    expect((await send("   ", json)).body).toEqual({ parsed: "nothing" });
  });

  it("inflates gzip, deflate and br bodies", async () => {
    const text = JSON.stringify({ compressed: true });
    for (const [encoding, bytes] of [
      ["gzip", gzipSync(text)],
      ["deflate", deflateSync(text)],
      ["br", brotliCompressSync(text)],
    ] as const) {
      expect(await send(bytes, { ...json, "content-encoding": encoding })).toEqual({
        status: 200,
        body: { parsed: { compressed: true } },
      });
    }
  });

  it.each([
    ["malformed JSON", "{not json", json, "Request body is not valid JSON"],
    [
      "an unknown charset",
      "{}",
      { "content-type": "application/json; charset=latin1" },
      "Unsupported request body encoding",
    ],
    [
      "an unknown encoding",
      "{}",
      { ...json, "content-encoding": "zstd" },
      "Unsupported request body encoding",
    ],
    ["a corrupt gzip body", "not gzip", { ...json, "content-encoding": "gzip" }, "Malformed request body"],
    ["a declared length over the limit", "x".repeat(bytesMax + 1), json, "Request body is too large"],
  ])("refuses %s with a 400", async (_label, body, headers, message) => {
    expect(await send(body, headers)).toEqual({ status: 400, body: { refused: message } });
  });

  it("counts the bytes of a chunked body and the inflated bytes of a compressed one against the limit", async () => {
    const chunked = new ReadableStream({
      start(controller) {
        for (let index = 0; index < 4; index++) controller.enqueue(new TextEncoder().encode("x".repeat(400)));
        controller.close();
      },
    });
    expect(await send(chunked, json)).toEqual({
      status: 400,
      body: { refused: "Request body is too large" },
    });
    const bomb = gzipSync(JSON.stringify({ padding: "x".repeat(bytesMax * 10) }));
    expect(bomb.length).toBeLessThan(bytesMax);
    expect(await send(bomb, { ...json, "content-encoding": "gzip" })).toEqual({
      status: 400,
      body: { refused: "Request body is too large" },
    });
  });

  it("keeps the connection usable after refusing an oversized compressed body mid-stream", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: Buffer, headers: Record<string, string>) =>
      new Promise<{ status: number; text: string; socketReused: boolean }>((resolve, reject) => {
        const outgoing = httpRequest(url, { method: "POST", agent, headers }, (incoming) => {
          let text = "";
          incoming.on("data", (chunk: Buffer) => {
            text += chunk.toString();
          });
          incoming.on("end", () =>
            resolve({ status: incoming.statusCode ?? 0, text, socketReused: outgoing.reusedSocket }),
          );
        });
        outgoing.on("error", reject);
        outgoing.end(body);
      });
    try {
      // Incompressible and large, so the limit is hit while most of the upload is still to come.
      const upload = gzipSync(incompressibleBytes(2 * 1024 * 1024));
      expect(upload.length).toBeGreaterThan(1024 * 1024);
      const refused = await post(upload, { ...json, "content-encoding": "gzip" });
      expect(refused.status).toBe(400);
      const next = await post(Buffer.from('{"after":true}'), json);
      expect(next).toEqual({
        status: 200,
        text: JSON.stringify({ parsed: { after: true } }),
        socketReused: true,
      });
    } finally {
      agent.destroy();
    }
  });
});

/** Deterministic bytes with no repetition for gzip to exploit (xorshift32). */
function incompressibleBytes(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  let state = 0x2545f491;
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[index] = state & 0xff;
  }
  return bytes;
}
