import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdapter } from "../../src/providers/create-adapter";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

let instant: Simulator;
let paced: Simulator;

beforeAll(async () => {
  instant = await startSimulator();
  // Pacing only changes when bytes leave, never what they are; no assertion here depends on time.
  paced = await startSimulator({ latencyMs: 15, tokensPerSecond: 4000 });
});
afterAll(async () => {
  await Promise.all([instant.close(), paced.close()]);
});

async function post(simulator: Simulator, path: string, body: unknown) {
  const response = await request(`${simulator.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, body: await response.body.json() };
}

describe("simulator", () => {
  it("given latency and a token rate, then JSON and streamed answers are the same as without pacing", async () => {
    for (const protocol of ["chat-completions", "responses", "messages", "generate-content"] as const) {
      const instantAdapter = createAdapter({ protocol, baseUrl: instant.url, apiKey: "k" });
      const pacedAdapter = createAdapter({ protocol, baseUrl: paced.url, apiKey: "k" });
      try {
        const expected = await instantAdapter.generate(simpleRequest, neverAborted());
        expect(await pacedAdapter.generate(simpleRequest, neverAborted())).toEqual(expected);
        const { parts, error } = await collectStream(pacedAdapter.stream(simpleRequest, neverAborted()));
        expect(error).toBeUndefined();
        expect(textOf(parts)).toBe(expected.text);
        expect(parts.at(-2)).toEqual({ type: "usage", usage: expected.usage });
      } finally {
        await Promise.all([instantAdapter.close(), pacedAdapter.close()]);
      }
    }
  });

  it("given a messages request without max_tokens, then it answers 400 in that protocol's error shape", async () => {
    const reply = await post(instant, "/v1/messages", {
      model: "m",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error", message: expect.stringContaining("max_tokens") },
    });
  });

  it("given a body that is not JSON, then it answers 400; given an unknown path, 404", async () => {
    const notJson = await request(`${instant.url}/chat/completions`, { method: "POST", body: "{oops" });
    expect(notJson.statusCode).toBe(400);
    expect(await notJson.body.json()).toMatchObject({ error: { message: "request body is not valid JSON" } });
    expect((await post(instant, "/v1/embeddings", {})).status).toBe(404);
  });

  it("records what it received, newest last", async () => {
    instant.clearRecordedRequests();
    await post(instant, "/v1/chat/completions", {
      model: "first",
      messages: [{ role: "user", content: "a" }],
    });
    await post(instant, "/v1/chat/completions", {
      model: "second",
      messages: [{ role: "user", content: "b" }],
    });
    const recorded = instant.recordedRequests();
    expect(
      recorded.map((entry) => [entry.method, entry.path, (entry.body as { model: string }).model]),
    ).toEqual([
      ["POST", "/v1/chat/completions", "first"],
      ["POST", "/v1/chat/completions", "second"],
    ]);
    expect(recorded[0]?.headers["content-type"]).toBe("application/json");
    await expect(recorded[1]?.ended).resolves.toBe("completed");
  });
});
