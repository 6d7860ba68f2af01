import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { recordedUsageOf } from "../support/recorded-usage";

/** The official `openai` client against the running gateway, every model family behind the simulator. */

async function usageCount(harness: GatewayHarness): Promise<number> {
  const result = await harness.service.ledger.pool.query<{ count: number }>(
    "SELECT count(*)::int AS count FROM ledger_events WHERE type = 'UsageRecorded'",
  );
  return result.rows[0]!.count;
}

describe("generation with the official openai client", () => {
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "generation" });
    const session = await harness.session("alice");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "alice" }, "100000");
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(() => {
    harness.simulator.setFault(undefined);
    harness.simulator.clearRecordedRequests();
  });

  it("lists the 23 models", async () => {
    const models = [];
    for await (const model of harness.openai(apiKey).models.list()) models.push(model);
    expect(models).toHaveLength(23);
    expect(models[0]).toEqual({
      id: "alpha-5.4-mini",
      object: "model",
      created: expect.any(Number),
      owned_by: "alpha",
      pricing: expect.objectContaining({ inputWonPerMillionTokens: expect.any(String) }),
    });
  });

  it("retrieves one model by id (models.retrieve); an unknown id is 404/120, a missing key 401/110", async () => {
    expect(await harness.openai(apiKey).models.retrieve("delta-4.8-opus")).toEqual({
      id: "delta-4.8-opus",
      object: "model",
      created: expect.any(Number),
      owned_by: "delta",
      pricing: expect.objectContaining({ discountRate: "0" }),
    });
    const unknown = await fetch(`${harness.baseUrl}/models/no-such-model`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ status: 120 });
    const anonymous = await fetch(`${harness.baseUrl}/models/delta-4.8-opus`);
    expect(anonymous.status).toBe(401);
  });

  it("answers chat.completions.create as JSON, records the upstream's usage and names it by x-request-id", async () => {
    const { data, response } = await harness
      .openai(apiKey)
      .chat.completions.create({ model: "gamma-4-5", messages: [{ role: "user", content: "Say hello" }] })
      .withResponse();

    expect(data).toMatchObject({
      id: expect.stringMatching(/^chatcmpl-\d{13}$/),
      object: "chat.completion",
      model: "gamma-4-5",
      choices: [
        { index: 0, message: { role: "assistant", content: expect.any(String) }, finish_reason: "stop" },
      ],
    });
    expect(data.usage!.total_tokens).toBe(data.usage!.prompt_tokens + data.usage!.completion_tokens);
    const requestId = response.headers.get("x-request-id")!;
    expect(await recordedUsageOf(harness, requestId)).toMatchObject({
      outcome: "completed",
      usageSource: "upstream",
      endpoint: "chat.completions",
      streamed: false,
      model: "gamma-4-5",
      account: { kind: "user", id: "alice" },
      tokens: { input: data.usage!.prompt_tokens, output: data.usage!.completion_tokens },
    });
    // Its charge is enqueued once the usage is logged (the log follows the answer in batches).
    await expect.poll(() => harness.enqueued, { timeout: 10_000 }).toContain(requestId);
  });

  it("streams chat completions: role first, usage only on the last chunk", async () => {
    const stream = await harness.openai(apiKey).chat.completions.create({
      model: "delta-4.6-sonnet",
      messages: [
        { role: "system", content: "Be brief" },
        { role: "user", content: "Tell me a story" },
      ],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(chunks.slice(0, -1).every((chunk) => !("usage" in chunk))).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices[0]).toMatchObject({ delta: {}, finish_reason: "stop" });
    expect(last.usage!.completion_tokens).toBeGreaterThan(0);
    const text = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("");
    expect(text.length).toBeGreaterThan(0);
    // The messages protocol was spoken upstream: system moved to the top level, usage asked for by streaming.
    const upstream = harness.simulator.lastRequest()!;
    expect(upstream.path).toBe("/v1/messages");
    expect(upstream.body).toMatchObject({ system: expect.stringContaining("Be brief"), stream: true });
    expect(upstream.headers["x-api-key"]).toBe("upstream-secret-delta");
  });

  it("supports chat.completions.stream().finalChatCompletion()", async () => {
    const final = await harness
      .openai(apiKey)
      .chat.completions.stream({ model: "beta-3-flash", messages: [{ role: "user", content: "Hi" }] })
      .finalChatCompletion();
    expect(final.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(final.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(harness.simulator.lastRequest()!.path).toMatch(/:streamGenerateContent\?alt=sse$/);
  });

  it("answers responses.create as JSON with output_text and usage", async () => {
    const response = await harness.openai(apiKey).responses.create({
      model: "epsilon",
      input: "Write a haiku",
      instructions: "You are a poet",
    });
    expect(response.id).toMatch(/^resp-\d{13}$/);
    expect(response.output_text.length).toBeGreaterThan(0);
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    const upstream = harness.simulator.lastRequest()!;
    expect(upstream.path).toBe("/chat/completions");
    expect(upstream.body).toMatchObject({
      messages: [{ role: "system", content: "You are a poet" }, { role: "user" }],
    });
  });

  it("streams responses events in order and supports responses.stream().finalResponse()", async () => {
    const events = [];
    for await (const event of await harness
      .openai(apiKey)
      .responses.create({ model: "zeta-mini", input: "Hi", stream: true })) {
      events.push(event);
    }
    const types = events.map((event) => event.type);
    expect(types.slice(0, 4)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
    ]);
    expect(types.slice(-4)).toEqual([
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));

    const final = await harness
      .openai(apiKey)
      .responses.stream({ model: "alpha-5.4-pro", input: "Hi" })
      .finalResponse();
    expect(final.output_text.length).toBeGreaterThan(0);
    expect(final.usage!.output_tokens).toBeGreaterThan(0);
    // alpha-5.4-pro exists upstream only in the responses format.
    expect(harness.simulator.lastRequest()!.path).toBe("/responses");
  });

  it("validates then drops the parameters a model ignores, and always asks a stream for usage", async () => {
    await harness.openai(apiKey).chat.completions.create({
      model: "alpha-5.5",
      messages: [{ role: "user", content: "Hi" }],
      temperature: 0.2,
      top_p: 0.5,
      max_tokens: 50,
      stream: true,
    });
    const upstream = harness.simulator.lastRequest()!.body as Record<string, unknown>;
    expect(upstream).not.toHaveProperty("temperature");
    expect(upstream).not.toHaveProperty("top_p");
    expect(upstream.stream_options).toEqual({ include_usage: true });

    await harness.openai(apiKey).chat.completions.create({
      model: "delta-4.8-opus",
      messages: [{ role: "user", content: "Hi" }],
      temperature: 0.2,
      top_p: 0.5,
    });
    const messagesBody = harness.simulator.lastRequest()!.body as Record<string, unknown>;
    expect(messagesBody).not.toHaveProperty("temperature");
    expect(messagesBody.top_p).toBe(0.5);

    await expect(
      harness.openai(apiKey).chat.completions.create({
        model: "alpha-5.5",
        messages: [{ role: "user", content: "Hi" }],
        temperature: 2.5,
      }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it("records what was produced when the client disconnects mid-stream, and aborts the upstream", async () => {
    const slow = await startGatewayHarness({ label: "disconnect", simulator: { tokensPerSecond: 50 } });
    try {
      const session = await slow.session("bob");
      const key = (await slow.issueKey(session)).key;
      await slow.topUp({ kind: "user", id: "bob" }, "1000");
      const controller = new AbortController();
      const response = await fetch(`${slow.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "alpha-5.4",
          messages: [{ role: "user", content: "Write a long essay" }],
          stream: true,
          max_tokens: 2000,
        }),
        signal: controller.signal,
      });
      const requestId = response.headers.get("x-request-id")!;
      const reader = response.body!.getReader();
      let received = "";
      while (!received.includes("\n\ndata: ") || received.split("\n\n").length < 4) {
        received += new TextDecoder().decode((await reader.read()).value);
      }
      controller.abort();

      expect(await slow.simulator.lastRequest()!.ended).toBe("connection-closed");
      await expect
        .poll(() => recordedUsageOf(slow, requestId), { timeout: 10_000 })
        .toMatchObject({
          outcome: "client-disconnected",
          usageSource: "estimated",
        });
      const usage = (await recordedUsageOf(slow, requestId))!;
      expect(usage.tokens.output).toBeGreaterThan(0);
      expect(usage.tokens.output).toBeLessThan(2000);
    } finally {
      await slow.close();
    }
  });

  it("treats a connection the upstream drops mid-stream as an upstream failure", async () => {
    const slow = await startGatewayHarness({ label: "dropped", simulator: { tokensPerSecond: 200 } });
    try {
      const session = await slow.session("carol");
      const key = (await slow.issueKey(session)).key;
      await slow.topUp({ kind: "user", id: "carol" }, "1000");
      slow.simulator.setFault({ kind: "break-stream", afterDeltas: 4, mode: "destroy-socket" });
      const response = await fetch(`${slow.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gamma-4-3",
          messages: [{ role: "user", content: "Hi there" }],
          stream: true,
        }),
      });
      const frames = (await response.text()).split("\n\n").filter(Boolean);
      expect(frames.at(-1)).toBe("data: [DONE]");
      // The error says what happened: the upstream was reached, then dropped the connection.
      const failure = JSON.parse(frames.at(-2)!.slice("data: ".length)) as {
        status: number;
        message: string;
      };
      expect(failure.status).toBe(300);
      expect(failure.message).toContain("the connection to the upstream was closed or reset");
      expect(await recordedUsageOf(slow, response.headers.get("x-request-id")!)).toMatchObject({
        outcome: "upstream-failed",
        usageSource: "estimated",
      });
    } finally {
      await slow.close();
    }
  });

  it("ends a stream whose upstream fails midway with an error event, and records what was produced", async () => {
    harness.simulator.setFault({ kind: "break-stream", afterDeltas: 3, mode: "error-event" });
    const before = await usageCount(harness);
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gamma-4-3",
        messages: [{ role: "user", content: "Hi there" }],
        stream: true,
      }),
    });
    const text = await response.text();
    const frames = text.split("\n\n").filter(Boolean);

    expect(frames.at(-1)).toBe("data: [DONE]");
    const error = JSON.parse(frames.at(-2)!.slice("data: ".length));
    expect(error).toMatchObject({ status: 300, error: { message: expect.any(String) } });
    const usage = await recordedUsageOf(harness, response.headers.get("x-request-id")!);
    expect(usage).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
    expect(await usageCount(harness)).toBe(before + 1);

    harness.simulator.setFault({ kind: "break-stream", afterDeltas: 2, mode: "error-event" });
    const events = await harness
      .openai(apiKey)
      .responses.create({ model: "zeta-pro2", input: "Hi", stream: true });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const event of events) seen.push(event.type);
      })(),
    ).rejects.toThrow();
    expect(seen).toContain("response.output_text.delta");
  });
});
