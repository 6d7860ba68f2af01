import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * C12: reply ids keep the `chatcmpl-<ms>` / `resp-<ms>` shape and are unique among the requests one process
 * serves, however many start in the same millisecond — checked end to end with the official client, JSON and
 * streamed, 50 at once.
 */

const concurrentRequests = 50;

let harness: GatewayHarness;
let client: OpenAI;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "reply_ids" });
  const session = await harness.session("ids-user");
  client = harness.openai((await harness.issueKey(session)).key, { timeoutMs: 60_000 });
  await harness.topUp({ kind: "user", id: "ids-user" }, "100000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

const inParallel = <T>(call: (index: number) => Promise<T>) =>
  Promise.all(Array.from({ length: concurrentRequests }, (_unused, index) => call(index)));

/** The `<ms>` of an id, checked to be an instant of this run (a burst may run a little ahead of the clock). */
function stampOf(id: string, prefix: "chatcmpl" | "resp", window: { fromMs: number; toMs: number }): number {
  expect(id).toMatch(new RegExp(`^${prefix}-\\d{13}$`));
  const stamp = Number(id.slice(prefix.length + 1));
  expect(stamp).toBeGreaterThanOrEqual(window.fromMs);
  expect(stamp).toBeLessThanOrEqual(window.toMs + concurrentRequests * 4);
  return stamp;
}

function expectDistinct(ids: readonly string[]): void {
  expect(new Set(ids).size).toBe(ids.length);
}

describe("given 50 concurrent requests from the official client", () => {
  const stamps: number[] = [];

  it("when they are chat completions as JSON, then 50 distinct chatcmpl-<ms> ids, each with its created second", async () => {
    const fromMs = Date.now();
    const completions = await inParallel((index) =>
      client.chat.completions.create({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: `request ${index}` }],
      }),
    );
    const window = { fromMs, toMs: Date.now() };
    for (const completion of completions) {
      const stamp = stampOf(completion.id, "chatcmpl", window);
      expect(completion.created).toBe(Math.floor(stamp / 1000));
      stamps.push(stamp);
    }
    expectDistinct(completions.map((completion) => completion.id));
  });

  it("when they are chat completions streamed, then every chunk of a stream carries its one id, distinct across streams", async () => {
    const fromMs = Date.now();
    const streamIds = await inParallel(async (index) => {
      const stream = await client.chat.completions.create({
        model: "delta-4.5-haiku",
        messages: [{ role: "user", content: `request ${index}` }],
        stream: true,
      });
      const ids = new Set<string>();
      for await (const chunk of stream) ids.add(chunk.id);
      expect(ids.size).toBe(1);
      return [...ids][0]!;
    });
    const window = { fromMs, toMs: Date.now() };
    for (const id of streamIds) stamps.push(stampOf(id, "chatcmpl", window));
    expectDistinct(streamIds);
  });

  it("when they are responses as JSON, then 50 distinct resp-<ms> ids, each message item resp-<ms>-msg", async () => {
    const fromMs = Date.now();
    const responses = await inParallel((index) =>
      client.responses.create({ model: "beta-3-flash", input: `request ${index}` }),
    );
    const window = { fromMs, toMs: Date.now() };
    for (const response of responses) {
      const stamp = stampOf(response.id, "resp", window);
      expect(response.created_at).toBe(Math.floor(stamp / 1000));
      expect(response.output.map((item) => item.id)).toEqual([`${response.id}-msg`]);
      stamps.push(stamp);
    }
    expectDistinct(responses.map((response) => response.id));
  });

  it("when they are responses streamed, then each stream's events and final response share one id, distinct across streams", async () => {
    const fromMs = Date.now();
    const streamIds = await inParallel(async (index) => {
      const stream = client.responses.stream({ model: "alpha-5.5", input: `request ${index}` });
      const ids = new Set<string>();
      for await (const event of stream) {
        if (event.type === "response.created" || event.type === "response.completed")
          ids.add(event.response.id);
        if (event.type === "response.output_text.delta") ids.add(event.item_id.replace(/-msg$/, ""));
      }
      ids.add((await stream.finalResponse()).id);
      expect(ids.size).toBe(1);
      return [...ids][0]!;
    });
    const window = { fromMs, toMs: Date.now() };
    for (const id of streamIds) stamps.push(stampOf(id, "resp", window));
    expectDistinct(streamIds);
  });

  it("then no two of the 200 replies share a millisecond stamp, whatever their format", () => {
    expect(stamps).toHaveLength(4 * concurrentRequests);
    expect(new Set(stamps).size).toBe(stamps.length);
  });
});
