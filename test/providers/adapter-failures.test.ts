import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdapter, type UpstreamAdapter } from "../../src/providers/create-adapter";
import {
  type GenerationStreamPart,
  UpstreamFailedError,
  type UpstreamProtocol,
  UpstreamRejectedError,
} from "../../src/providers/provider";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import {
  collectStream,
  deltaCount,
  neverAborted,
  refusedUrl,
  simpleRequest,
  textOf,
} from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

const protocols: UpstreamProtocol[] = ["chat-completions", "responses", "messages", "generate-content"];

describe.each(protocols)("%s adapter failures", (protocol) => {
  // The protocols that report their input at the stream's start: its counts lead the first output.
  const inputFirst = protocol === "messages" || protocol === "generate-content" ? ["input-usage"] : [];

  it("given an upstream 400 that echoes credentials, then it is rejected with the sanitised upstream message", async () => {
    simulator().setFault({
      kind: "status",
      status: 400,
      message: `temperature must be at most 2 (key ${testApiKey}, also sk-live-0123456789abcdef)`,
    });
    const failure = adapter(protocol).generate(simpleRequest, neverAborted());

    await expect(failure).rejects.toBeInstanceOf(UpstreamRejectedError);
    const error = (await failure.catch((caught: unknown) => caught)) as UpstreamRejectedError;
    expect(error.upstreamStatus).toBe(400);
    expect(error.message).toContain("temperature must be at most 2");
    expect(error.message).not.toContain(testApiKey);
    expect(error.message).not.toContain("sk-live");
  });

  it("given an upstream 500, then it failed with reason status", async () => {
    simulator().setFault({ kind: "status", status: 500 });
    await expect(adapter(protocol).generate(simpleRequest, neverAborted())).rejects.toMatchObject({
      name: "UpstreamFailedError",
      reason: "status",
    });
  });

  it("given an upstream 429 on a stream, then the stream is rejected before any part", async () => {
    simulator().setFault({ kind: "status", status: 429, message: "rate limited" });
    const { parts, error } = await collectStream(adapter(protocol).stream(simpleRequest, neverAborted()));
    expect(parts).toEqual([]);
    expect(error).toBeInstanceOf(UpstreamRejectedError);
    expect(error).toMatchObject({ upstreamStatus: 429 });
  });

  it("given an upstream that never answers, then it fails with reason timeout and drops the connection", async () => {
    simulator().setFault({ kind: "hang" });
    const hasty = adapter(protocol, { timeouts: { headersTimeoutMs: 100 } });

    await expect(hasty.generate(simpleRequest, neverAborted())).rejects.toMatchObject({ reason: "timeout" });
    // The simulator shares this process: a stall longer than the timeout can run the timer before it reads.
    await waitForRequest();
    await expect(simulator().lastRequest()?.ended).resolves.toBe("connection-closed");
  });

  it("given nothing listening, then it fails with reason connection", async () => {
    const unreachable = createAdapter({ protocol, baseUrl: await refusedUrl(), apiKey: testApiKey });
    try {
      await expect(unreachable.generate(simpleRequest, neverAborted())).rejects.toMatchObject({
        reason: "connection",
      });
      const { error } = await collectStream(unreachable.stream(simpleRequest, neverAborted()));
      expect(error).toMatchObject({ reason: "connection" });
    } finally {
      await unreachable.close();
    }
  });

  it("given a reply that is not JSON, then it fails with reason malformed (JSON and stream)", async () => {
    simulator().setFault({ kind: "malformed-json" });
    await expect(adapter(protocol).generate(simpleRequest, neverAborted())).rejects.toMatchObject({
      reason: "malformed",
    });
    const { error } = await collectStream(adapter(protocol).stream(simpleRequest, neverAborted()));
    expect(error).toMatchObject({ reason: "malformed" });
  });

  it("given JSON that does not follow the protocol, then it fails with reason malformed (JSON and stream)", async () => {
    simulator().setFault({ kind: "unexpected-shape" });
    await expect(adapter(protocol).generate(simpleRequest, neverAborted())).rejects.toMatchObject({
      reason: "malformed",
    });
    const { error } = await collectStream(adapter(protocol).stream(simpleRequest, neverAborted()));
    expect(error).toMatchObject({ reason: "malformed" });
  });

  it("given the protocol's error event after 3 deltas, then the 3 deltas are yielded and then it throws", async () => {
    const complete = await adapter(protocol).generate(simpleRequest, neverAborted());
    simulator().setFault({ kind: "break-stream", afterDeltas: 3, mode: "error-event" });

    const { parts, error } = await collectStream(adapter(protocol).stream(simpleRequest, neverAborted()));

    expect(parts.map((part) => part.type)).toEqual([...inputFirst, "text-delta", "text-delta", "text-delta"]);
    expect(complete.text.startsWith(textOf(parts))).toBe(true);
    expect(error).toBeInstanceOf(UpstreamFailedError);
    expect(error).toMatchObject({ reason: "status" });
  });

  it("given the socket destroyed after 3 deltas, then the 3 deltas are yielded and then it fails with connection", async () => {
    simulator().setFault({ kind: "break-stream", afterDeltas: 3, mode: "destroy-socket" });
    const { parts, error } = await collectStream(adapter(protocol).stream(simpleRequest, neverAborted()));
    expect(deltaCount(parts)).toBe(3);
    expect(parts).toHaveLength(inputFirst.length + 3);
    expect(error).toMatchObject({ reason: "connection" });
  });

  it("given a stream that stalls after 2 deltas, then the body timeout fails it after those deltas", async () => {
    simulator().setFault({ kind: "break-stream", afterDeltas: 2, mode: "stall" });
    const hasty = adapter(protocol, { timeouts: { bodyTimeoutMs: 150 } });
    const { parts, error } = await collectStream(hasty.stream(simpleRequest, neverAborted()));
    expect(deltaCount(parts)).toBe(2);
    expect(error).toMatchObject({ reason: "timeout" });
  });

  it("given the caller aborts mid-stream, then iteration ends with the abort reason and upstream sees the close", async () => {
    simulator().setFault({ kind: "break-stream", afterDeltas: 2, mode: "stall" });
    const controller = new AbortController();
    const iterator = adapter(protocol).stream(simpleRequest, controller.signal)[Symbol.asyncIterator]();
    // The two deltas before the stall may arrive in one read or in two.
    const received: GenerationStreamPart[] = [];
    while (deltaCount(received) < 2) received.push(...((await iterator.next()).value ?? []));
    expect(received).toEqual([
      ...inputFirst.map((type) => expect.objectContaining({ type })),
      expect.objectContaining({ type: "text-delta" }),
      expect.objectContaining({ type: "text-delta" }),
    ]);

    const clientGone = new Error("client disconnected");
    controller.abort(clientGone);

    await expect(iterator.next()).rejects.toBe(clientGone);
    await expect(simulator().lastRequest()?.ended).resolves.toBe("connection-closed");
  });

  it("given the caller aborts a JSON request, then it rejects with the abort reason and upstream sees the close", async () => {
    simulator().setFault({ kind: "hang" });
    const controller = new AbortController();
    const pending = adapter(protocol).generate(simpleRequest, controller.signal);
    await waitForRequest();

    const clientGone = new Error("client disconnected");
    controller.abort(clientGone);

    await expect(pending).rejects.toBe(clientGone);
    await expect(simulator().lastRequest()?.ended).resolves.toBe("connection-closed");
  });

  it("given the consumer stops reading early, then the upstream connection is closed", async () => {
    simulator().setFault({ kind: "break-stream", afterDeltas: 2, mode: "stall" });
    for await (const parts of adapter(protocol).stream(simpleRequest, neverAborted())) {
      expect(parts.at(-1)?.type).toBe("text-delta");
      break;
    }
    await expect(simulator().lastRequest()?.ended).resolves.toBe("connection-closed");
  });
});

/** The simulator records a request once its body arrived; polling keeps the test free of fixed sleeps. */
async function waitForRequest(): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (simulator().lastRequest()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error("the simulator never received the request");
}

/** An upstream answering 200 with a failure of its own whose words quote the key it was called with. */
describe("a failure reported inside a 200 that quotes the upstream key", () => {
  const upstreamKey = "self-hosted-key-5b7c";
  let server: Server;
  let baseUrl: string;
  const adapters: UpstreamAdapter[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume();
      const message = `quota of key ${upstreamKey} exhausted`;
      if (request.url?.startsWith("/chat/completions")) {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.end(`data: ${JSON.stringify({ error: { message } })}\n\n`);
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ id: "resp_1", status: "failed", error: { message }, output: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await Promise.all(adapters.map((adapter) => adapter.close()));
    await new Promise((resolve) => server.close(resolve));
  });

  function adapterOf(protocol: UpstreamProtocol): UpstreamAdapter {
    const adapter = createAdapter({ protocol, baseUrl, apiKey: upstreamKey });
    adapters.push(adapter);
    return adapter;
  }

  it("given a stream's error event quoting the key, when it fails the stream, then its message shows the words without the key", async () => {
    const { error } = await collectStream(
      adapterOf("chat-completions").stream(simpleRequest, neverAborted()),
    );

    expect(error).toBeInstanceOf(UpstreamFailedError);
    expect((error as Error).message).toContain("exhausted");
    expect((error as Error).message).not.toContain(upstreamKey);
  });

  it("given a failed response quoting the key, when it is the JSON reply, then its message shows the words without the key", async () => {
    const error = await adapterOf("responses")
      .generate(simpleRequest, neverAborted())
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(UpstreamFailedError);
    expect((error as Error).message).toContain("exhausted");
    expect((error as Error).message).not.toContain(upstreamKey);
  });
});
