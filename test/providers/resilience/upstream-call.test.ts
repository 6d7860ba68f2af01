import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../../src/config";
import {
  type EndpointUpstream,
  UpstreamRegistry,
  type UpstreamResilienceOptions,
} from "../../../src/gateway/generation/upstream-registry";
import { resilienceLimitDefaults } from "../../../src/kernel/limits";
import { type CatalogModel, findModel } from "../../../src/providers/catalog";
import {
  type GenerationRequest,
  type GenerationStreamPart,
  type ModelFamily,
  UpstreamFailedError,
  UpstreamRejectedError,
  UpstreamThrottledError,
} from "../../../src/providers/provider";
import { type Simulator, startSimulator } from "../../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../../support/faulty-upstream";

/**
 * The resilient call (C13) against fake endpoints speaking the real chat-completions protocol (the
 * simulator behind a server that fails on cue), through the registry the gateway uses.
 */

const model = findModel("gamma-4-5")!;

function requestFor(target: CatalogModel): GenerationRequest {
  return {
    upstreamModelId: target.upstreamModelId,
    messages: [{ role: "user", content: [{ type: "text", text: "Hello resilience" }] }],
    maxOutputTokens: 16,
  };
}

const fastLimits = {
  ...resilienceLimitDefaults,
  backoffBaseMs: 5,
  backoffMaxMs: 20,
  breakerRequestsMin: 4,
  breakerOpenMs: 300,
};

function healthOf(registry: UpstreamRegistry, endpoint: string) {
  const health = registry.health().find((candidate) => candidate.endpoint === endpoint);
  if (!health) throw new Error(`no endpoint ${endpoint}`);
  return health;
}

describe("upstream call (C13)", () => {
  let simulator: Simulator;
  let endpoints: FaultyUpstream[];
  const registries: UpstreamRegistry[] = [];

  function registryOf(
    upstreams: FaultyUpstream[],
    options: Omit<UpstreamResilienceOptions, "modelEndpoints"> & { weights?: number[] } = {},
  ): UpstreamRegistry {
    const family = Object.fromEntries(
      modelFamilies.map((name) => [name, { baseUrl: simulator.url, apiKey: "family-key" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
    const modelEndpoints = new Map<string, EndpointUpstream[]>([
      [
        model.slug,
        upstreams.map((upstream, index) => ({
          name: `gamma-${index}`,
          baseUrl: upstream.url,
          apiKey: `secret-key-${index}`,
          weight: options.weights?.[index] ?? 1,
        })),
      ],
    ]);
    const registry = new UpstreamRegistry(family, { headersTimeoutMs: 2_000 }, new Map(), {
      limits: fastLimits,
      ...options,
      modelEndpoints,
    });
    registries.push(registry);
    return registry;
  }

  beforeAll(async () => {
    simulator = await startSimulator({});
    endpoints = [await startFaultyUpstream(simulator.url), await startFaultyUpstream(simulator.url)];
  });
  afterEach(async () => {
    for (const endpoint of endpoints) {
      endpoint.setPlan(() => ({ kind: "pass" }));
      endpoint.served.length = 0;
      await endpoint.up().catch(() => {});
    }
    await Promise.all(registries.splice(0).map((registry) => registry.close()));
  });
  afterAll(async () => {
    for (const endpoint of endpoints) await endpoint.close();
    await simulator.close();
  });

  it("retries a 503 and a reset on another endpoint, and records each attempt by endpoint name", async () => {
    const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
    first.setPlan(() => ({ kind: "status", status: 503 }));
    second.setPlan((index) => (index === 0 ? { kind: "reset" } : { kind: "pass" }));
    const call = registryOf([first, second]).call(model, requestFor);

    const result = await call.generate(new AbortController().signal);

    expect(result.text.length).toBeGreaterThan(0);
    expect(call.attempts.map(({ endpoint, status, error }) => ({ endpoint, status, error }))).toEqual([
      { endpoint: "gamma-0", status: 503, error: "status" },
      { endpoint: "gamma-1", status: null, error: "connection" },
      { endpoint: "gamma-1", status: 200, error: null },
    ]);
    expect(JSON.stringify(call.attempts)).not.toContain("secret-key");
    expect(call.answeringModel.slug).toBe("gamma-4-5");
  });

  it.each([500, 502, 503, 504, 529])(
    "retries every status C13 lists: a %i, then the answer from another endpoint",
    async (status) => {
      const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
      first.setPlan(() => ({ kind: "status", status }));
      const call = registryOf([first, second]).call(model, requestFor);

      const result = await call.generate(new AbortController().signal);

      expect(result.text.length).toBeGreaterThan(0);
      expect(call.attempts.map(({ endpoint, status }) => ({ endpoint, status }))).toEqual([
        { endpoint: "gamma-0", status },
        { endpoint: "gamma-1", status: 200 },
      ]);
    },
  );

  it("does not retry what C13 does not list: a 400 is the answer at once", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 400 }));
    const call = registryOf([only]).call(model, requestFor);

    await expect(call.generate(new AbortController().signal)).rejects.toBeInstanceOf(UpstreamRejectedError);
    expect(call.attempts).toHaveLength(1);
  });

  it("honours Retry-After: the next attempt at that endpoint is never sooner", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan((index) =>
      index === 0 ? { kind: "status", status: 429, retryAfter: "1" } : { kind: "pass" },
    );
    const call = registryOf([only]).call(model, requestFor);

    await call.generate(new AbortController().signal);

    expect(only.served.map((served) => served.fault)).toEqual(["429", "pass"]);
    expect(only.served[1]!.atMs - only.served[0]!.atMs).toBeGreaterThanOrEqual(1_000);
  });

  it("answers 429 with the upstream's Retry-After at once when waiting would pass the deadline", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 429, retryAfter: "30" }));
    const call = registryOf([only], { limits: { ...fastLimits, requestDeadlineMs: 10_000 } }).call(
      model,
      requestFor,
    );
    const startedMs = Date.now();

    const failure = await call.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamThrottledError);
    expect((failure as UpstreamThrottledError).retryAfterSeconds).toBe(30);
    expect((failure as Error).message).toContain("1 attempt made");
    expect(Date.now() - startedMs).toBeLessThan(2_000);
    expect(only.served).toHaveLength(1);
  });

  it("given an upstream's Retry-After of 29.5 s, then the client is told 30: never sooner than the upstream asked", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 429, retryAfter: "29.5" }));
    const call = registryOf([only], { limits: { ...fastLimits, requestDeadlineMs: 10_000 } }).call(
      model,
      requestFor,
    );

    const failure = await call.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamThrottledError);
    expect((failure as UpstreamThrottledError).retryAfterSeconds).toBe(30);
  });

  it("given an endpoint that throttles every request, then its breaker stays closed: a 429 is the upstream's answer, not its failure", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 429, retryAfter: "30" }));
    const registry = registryOf([only], { limits: { ...fastLimits, requestDeadlineMs: 10_000 } });

    for (let request = 0; request < fastLimits.breakerRequestsMin * 2; request += 1)
      await expect(
        registry.call(model, requestFor).generate(new AbortController().signal),
      ).rejects.toBeInstanceOf(UpstreamThrottledError);

    expect(healthOf(registry, "gamma-0").breakerState).toBe("closed");
  });

  it.each([503, 529])(
    "honours a %i's Retry-After as a 429's: the retry at that endpoint is never sooner",
    async (status) => {
      const [only] = endpoints as [FaultyUpstream];
      only.setPlan((index) => (index === 0 ? { kind: "status", status, retryAfter: "1" } : { kind: "pass" }));
      const call = registryOf([only]).call(model, requestFor);

      await call.generate(new AbortController().signal);

      expect(only.served.map((served) => served.fault)).toEqual([String(status), "pass"]);
      expect(only.served[1]!.atMs - only.served[0]!.atMs).toBeGreaterThanOrEqual(1_000);
    },
  );

  it("answers a 503 whose Retry-After outlasts the deadline as the failure it is, 500/300, with when to come back", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 503, retryAfter: "30" }));
    const call = registryOf([only], { limits: { ...fastLimits, requestDeadlineMs: 10_000 } }).call(
      model,
      requestFor,
    );
    const startedMs = Date.now();

    const failure = await call.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamFailedError);
    expect((failure as UpstreamFailedError).upstreamStatus).toBe(503);
    expect((failure as UpstreamFailedError).retryAfterSeconds).toBe(30);
    expect((failure as Error).message).toBe("upstream failed (HTTP 503); 1 attempt made; retry after 30 s");
    expect(Date.now() - startedMs).toBeLessThan(2_000);
    expect(only.served).toHaveLength(1);
  });

  it("says what the upstream did and how many attempts were made when every attempt fails", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 502 }));
    const call = registryOf([only], {
      limits: { ...fastLimits, attemptsMax: 3, breakerRequestsMin: 100 },
    }).call(model, requestFor);

    const failure = await call.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamFailedError);
    expect((failure as Error).message).toMatch(/HTTP 502.*3 attempts made/);
    expect(only.served).toHaveLength(3);
  });

  it("moves all traffic off an endpoint that is down within the breaker's window, and shares it again once it is back", async () => {
    const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
    const limits = { ...fastLimits, breakerOpenMs: 1_000 };
    const registry = registryOf([first, second], { limits });
    await first.down();

    const calls = [];
    for (let index = 0; index < 20; index++) {
      const call = registry.call(model, requestFor);
      await call.generate(new AbortController().signal);
      calls.push(call);
    }
    // The breaker opened after its minimum of failed requests; after that the dead endpoint is not tried at all.
    const triedDead = calls.map((call) => call.attempts.some((attempt) => attempt.endpoint === "gamma-0"));
    expect(triedDead.slice(0, fastLimits.breakerRequestsMin * 2).filter(Boolean).length).toBeLessThanOrEqual(
      fastLimits.breakerRequestsMin,
    );
    // At most a half-open probe (one per open interval) reaches it among the last ten.
    expect(triedDead.slice(-10).filter(Boolean).length).toBeLessThanOrEqual(1);
    expect(registry.health().find((health) => health.endpoint === "gamma-0")!.breakerState).toBe("open");

    await first.up();
    await new Promise((resolve) => setTimeout(resolve, limits.breakerOpenMs));
    const before = first.served.length;
    for (let index = 0; index < 10; index++)
      await registry.call(model, requestFor).generate(new AbortController().signal);
    // A half-open probe succeeded and closed it: the two share the traffic again, one for one.
    expect(first.served.length - before).toBe(5);
    expect(registry.health().find((health) => health.endpoint === "gamma-0")!.breakerState).toBe("closed");
  });

  it("given an endpoint that never answers, when requests are cut at their deadline there, then its breaker opens and the other endpoint serves the rest", async () => {
    const silent = await startSimulator({ fault: { kind: "hang" } });
    const hanging = await startFaultyUpstream(silent.url);
    const [serving] = endpoints as [FaultyUpstream];
    // The deadline is every request's, the served ones' too (5-15 ms here): 1 s, so a loaded machine's stall
    // never cuts one of them.
    const registry = registryOf([hanging, serving], {
      limits: { ...fastLimits, requestDeadlineMs: 1_000, breakerOpenMs: 60_000 },
    });
    try {
      const outcomes: string[] = [];
      const hungAttempts: (string | null)[] = [];
      for (let index = 0; index < 20; index++) {
        const call = registry.call(model, requestFor);
        const failed = await call.generate(new AbortController().signal).then(
          () => false,
          () => true,
        );
        outcomes.push(`${call.attempts[0]!.endpoint}:${failed ? "failed" : "served"}`);
        if (call.attempts[0]!.endpoint === "gamma-0") hungAttempts.push(call.attempts[0]!.error);
      }

      // Each request that went to it spent its whole deadline there, cut by it (not by the 2 s wait for
      // headers): its client saw a failure.
      expect(outcomes.filter((outcome) => outcome === "gamma-0:failed")).toHaveLength(
        fastLimits.breakerRequestsMin,
      );
      expect(hungAttempts).toEqual(Array(fastLimits.breakerRequestsMin).fill("deadline"));
      expect(outcomes.slice(-10)).toEqual(Array(10).fill("gamma-1:served"));
      expect(healthOf(registry, "gamma-0").breakerState).toBe("open");
    } finally {
      await hanging.close();
      await silent.close();
    }
  });

  it("serves a flaky endpoint's requests on their retries and never opens its breaker for the failed attempts", async () => {
    const [only] = endpoints as [FaultyUpstream];
    // Every other attempt fails (500 and 503 in turn); every request's retry is served.
    only.setPlan((index) =>
      index % 2 === 0 ? { kind: "status", status: index % 4 === 0 ? 500 : 503 } : { kind: "pass" },
    );
    const registry = registryOf([only]);

    for (let index = 0; index < 40; index++) {
      const call = registry.call(model, requestFor);
      await call.generate(new AbortController().signal);
      expect(call.attempts.map((attempt) => attempt.status)).toEqual([index % 2 === 0 ? 500 : 503, 200]);
    }
    expect(only.served).toHaveLength(80);
    expect(healthOf(registry, "gamma-0")).toMatchObject({
      breakerState: "closed",
      recentRequests: 40,
      recentFailedRequests: 0,
    });
  });

  it("makes one panic attempt, at the endpoint that failed least recently, once every endpoint's breaker is open", async () => {
    const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
    const openMs = 60_000;
    const registry = registryOf([first, second], { limits: { ...fastLimits, breakerOpenMs: openMs } });
    first.setPlan(() => ({ kind: "status", status: 503 }));
    second.setPlan(() => ({ kind: "status", status: 502 }));
    while (
      healthOf(registry, "gamma-0").breakerState !== "open" ||
      healthOf(registry, "gamma-1").breakerState !== "open"
    )
      await registry
        .call(model, requestFor)
        .generate(new AbortController().signal)
        .catch(() => {});
    const lastFailed = first.served.at(-1)!.atMs > second.served.at(-1)!.atMs ? "gamma-0" : "gamma-1";

    const call = registry.call(model, requestFor);
    const failure = await call.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamFailedError);
    expect(call.attempts).toHaveLength(1);
    expect(call.attempts[0]!.endpoint).not.toBe(lastFailed);
    expect((failure as Error).message).toMatch(/1 attempt made; circuit open, next probe in \d+ s/);
    const retryAfterSeconds = (failure as UpstreamFailedError).retryAfterSeconds!;
    expect(retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(retryAfterSeconds).toBeLessThanOrEqual(openMs / 1_000);
  });

  it("says when to come back while the model's breakers are open, past a fallback that cannot take the request", async () => {
    const [only] = endpoints as [FaultyUpstream];
    const registry = registryOf([only], { limits: { ...fastLimits, breakerOpenMs: 60_000 } });
    only.setPlan(() => ({ kind: "status", status: 503 }));
    // A fallback whose breaker is closed, skipped for these requests (the key may not call it, or it cannot
    // take the request): it is no way to an answer.
    const withFallback: CatalogModel = { ...model, fallbacks: ["delta-4.5-haiku"] };
    const skippingFallback = (target: CatalogModel) => (target === withFallback ? requestFor(target) : null);
    while (healthOf(registry, "gamma-0").breakerState !== "open")
      await registry
        .call(withFallback, skippingFallback)
        .generate(new AbortController().signal)
        .catch(() => {});

    const call = registry.call(withFallback, skippingFallback);
    const failure = await call.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamFailedError);
    expect(call.attempts.map(({ model: slug }) => slug)).toEqual(["gamma-4-5"]);
    expect((failure as Error).message).toMatch(/1 attempt made; circuit open, next probe in \d+ s/);
    expect((failure as UpstreamFailedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it("closes an open breaker when a panic attempt is served, and answers that request", async () => {
    const [only] = endpoints as [FaultyUpstream];
    const registry = registryOf([only], { limits: { ...fastLimits, breakerOpenMs: 60_000 } });
    only.setPlan(() => ({ kind: "status", status: 500 }));
    while (healthOf(registry, "gamma-0").breakerState !== "open")
      await registry
        .call(model, requestFor)
        .generate(new AbortController().signal)
        .catch(() => {});
    only.setPlan(() => ({ kind: "pass" }));

    const call = registry.call(model, requestFor);
    const result = await call.generate(new AbortController().signal);

    expect(result.text.length).toBeGreaterThan(0);
    expect(call.attempts.map((attempt) => attempt.status)).toEqual([200]);
    expect(healthOf(registry, "gamma-0").breakerState).toBe("closed");
  });

  it("spreads requests by weight", async () => {
    const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
    const registry = registryOf([first, second], { weights: [3, 1] });
    for (let index = 0; index < 20; index++)
      await registry.call(model, requestFor).generate(new AbortController().signal);
    expect([first.served.length, second.served.length]).toEqual([15, 5]);
  });

  it("does not retry a stream once its first parts have been handed on", async () => {
    const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
    simulator.setFault({ kind: "break-stream", afterDeltas: 2, mode: "destroy-socket" });
    try {
      const call = registryOf([first, second]).call(model, requestFor);
      let text = "";
      const failure = await (async () => {
        for await (const parts of call.stream(new AbortController().signal))
          for (const part of parts) if (part.type === "text-delta") text += part.text;
      })().catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(UpstreamFailedError);
      expect(text.length).toBeGreaterThan(0);
      expect(call.attempts).toHaveLength(1);
      expect(first.served.length + second.served.length).toBe(1);
    } finally {
      simulator.setFault(undefined);
    }
  });

  it("retries a stream that failed before its first output", async () => {
    const [first, second] = endpoints as [FaultyUpstream, FaultyUpstream];
    first.setPlan(() => ({ kind: "status", status: 529 }));
    const call = registryOf([first, second]).call(model, requestFor);
    let text = "";
    for await (const parts of call.stream(new AbortController().signal))
      for (const part of parts) if (part.type === "text-delta") text += part.text;

    expect(text.length).toBeGreaterThan(0);
    expect(call.attempts.map((attempt) => attempt.status)).toEqual([529, 200]);
  });

  it("stops at once when the caller aborts during a backoff", async () => {
    const [only] = endpoints as [FaultyUpstream];
    only.setPlan(() => ({ kind: "status", status: 429, retryAfter: "5" }));
    const call = registryOf([only]).call(model, requestFor);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client disconnected")), 200);
    const startedMs = Date.now();

    await expect(call.generate(controller.signal)).rejects.toThrow("client disconnected");
    expect(Date.now() - startedMs).toBeLessThan(1_000);
  });

  it("given requests their clients left after a failed attempt, then the breaker counts none of them: a client leaving says nothing of the endpoint", async () => {
    const [only] = endpoints as [FaultyUpstream];
    // A Retry-After holds each request's retry back long enough for its client to leave meanwhile.
    only.setPlan(() => ({ kind: "status", status: 503, retryAfter: "5" }));
    const registry = registryOf([only]);
    for (let index = 0; index < 2 * fastLimits.breakerRequestsMin; index++) {
      const controller = new AbortController();
      const call = registry.call(model, requestFor);
      const answering = call.generate(controller.signal);
      await expect.poll(() => call.attempts.length).toBe(1);
      controller.abort(new Error("client disconnected"));
      await expect(answering).rejects.toThrow("client disconnected");
    }
    expect(healthOf(registry, "gamma-0").breakerState).toBe("closed");

    // The same failures, each seen through to its answer, are counted: the breaker opens at its minimum.
    only.setPlan(() => ({ kind: "status", status: 503 }));
    for (let index = 1; index <= fastLimits.breakerRequestsMin; index++) {
      await expect(registry.call(model, requestFor).generate(new AbortController().signal)).rejects.toThrow(
        UpstreamFailedError,
      );
      expect(healthOf(registry, "gamma-0").breakerState).toBe(
        index < fastLimits.breakerRequestsMin ? "closed" : "open",
      );
    }
  });
});

describe("a stream's deadline", () => {
  it("given a stream whose first output came within the request's deadline, when it flows on past the deadline, then it is not cut: the deadline bounds the wait for output, not the output", async () => {
    const paced = await startSimulator({ tokensPerSecond: 40 });
    const family = Object.fromEntries(
      modelFamilies.map((name) => [name, { baseUrl: paced.url, apiKey: "family-key" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
    const deadlineMs = 150;
    const registry = new UpstreamRegistry(family, {}, new Map(), {
      limits: { ...fastLimits, requestDeadlineMs: deadlineMs },
    });
    try {
      const call = registry.call(model, requestFor);
      const startedMs = Date.now();
      const parts: GenerationStreamPart[] = [];
      for await (const batch of call.stream(new AbortController().signal)) parts.push(...batch);

      expect(Date.now() - startedMs).toBeGreaterThan(2 * deadlineMs);
      expect(parts.filter((part) => part.type === "text-delta").length).toBeGreaterThan(1);
      expect(parts.at(-1)).toEqual({ type: "finish", finishReason: expect.any(String) });
      expect(call.attempts.map((attempt) => attempt.status)).toEqual([200]);
    } finally {
      await registry.close();
      await paced.close();
    }
  });
});

describe("an endpoint's concurrency limit", () => {
  let slow: Simulator;
  let registry: UpstreamRegistry;

  beforeAll(async () => {
    slow = await startSimulator({ latencyMs: 500 });
    const family = Object.fromEntries(
      modelFamilies.map((name) => [name, { baseUrl: slow.url, apiKey: "family-key" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
    registry = new UpstreamRegistry(family, {}, new Map(), {
      limits: fastLimits,
      modelEndpoints: new Map([
        [
          model.slug,
          [{ name: "gamma-small", baseUrl: slow.url, apiKey: "key", weight: 1, concurrentRequestsMax: 1 }],
        ],
      ]),
    });
  });
  afterAll(async () => {
    await registry.close();
    await slow.close();
  });

  it("never sends it more at once: a request finding it full waits its backoffs, then answers 429", async () => {
    const first = registry.call(model, requestFor).generate(new AbortController().signal);
    const second = registry.call(model, requestFor);

    const failure = await second.generate(new AbortController().signal).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(UpstreamThrottledError);
    expect((failure as Error).message).toContain(
      "every upstream endpoint of gamma-4-5 is at its concurrency limit",
    );
    expect(second.attempts).toHaveLength(0);
    const small = () => registry.health().find((health) => health.endpoint === "gamma-small");
    expect(small()).toMatchObject({ outstanding: 1, concurrentRequestsMax: 1 });
    await first;
    expect(small()).toMatchObject({ outstanding: 0 });
  });
});

describe("retries in the metrics", () => {
  it("given an endpoint at its concurrency limit, when a request waits for room and then makes its one attempt, then that attempt is not counted a retry", async () => {
    const slow = await startSimulator({ latencyMs: 60 });
    const family = Object.fromEntries(
      modelFamilies.map((name) => [name, { baseUrl: slow.url, apiKey: "family-key" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
    const seen: { model: string; retry: boolean }[] = [];
    const registry = new UpstreamRegistry(family, {}, new Map(), {
      limits: { ...fastLimits, backoffBaseMs: 40, backoffMaxMs: 40 },
      modelEndpoints: new Map([
        [
          model.slug,
          [{ name: "gamma-one", baseUrl: slow.url, apiKey: "key", weight: 1, concurrentRequestsMax: 1 }],
        ],
      ]),
      observer: {
        attempted: (attempt, retry) => seen.push({ model: attempt.model, retry }),
        outstandingChanged() {},
        answeredByFallback() {},
      },
    });
    try {
      const first = registry.call(model, requestFor);
      const second = registry.call(model, requestFor);
      const answering = first.generate(new AbortController().signal);
      await second.generate(new AbortController().signal);
      await answering;

      expect(second.attempts).toHaveLength(1);
      expect(seen).toEqual([
        { model: model.slug, retry: false },
        { model: model.slug, retry: false },
      ]);
    } finally {
      await registry.close();
      await slow.close();
    }
  });
});

describe("fallbacks (C13)", () => {
  let simulator: Simulator;
  let broken: FaultyUpstream;
  let registry: UpstreamRegistry;

  beforeAll(async () => {
    simulator = await startSimulator({});
    broken = await startFaultyUpstream(simulator.url);
    broken.setPlan(() => ({ kind: "status", status: 503 }));
    const family = Object.fromEntries(
      modelFamilies.map((name) => [name, { baseUrl: simulator.url, apiKey: "family-key" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
    registry = new UpstreamRegistry(family, {}, new Map(), {
      limits: { ...fastLimits, attemptsMax: 4 },
      modelEndpoints: new Map([
        [model.slug, [{ name: "gamma-broken", baseUrl: broken.url, apiKey: "key", weight: 1 }]],
      ]),
    });
  });
  afterAll(async () => {
    await registry.close();
    await broken.close();
    await simulator.close();
  });

  it("answers from the configured fallback, of another protocol, once the model's endpoints failed", async () => {
    const withFallback: CatalogModel = { ...model, fallbacks: ["delta-4.5-haiku"] };
    const call = registry.call(withFallback, requestFor);

    const result = await call.generate(new AbortController().signal);

    expect(result.text.length).toBeGreaterThan(0);
    expect(call.answeringModel.slug).toBe("delta-4.5-haiku");
    expect(call.attempts.map(({ endpoint, model: slug }) => `${endpoint}/${slug}`)).toEqual([
      "gamma-broken/gamma-4-5",
      "delta/delta-4.5-haiku",
    ]);
  });

  it("given a fallback served by the same endpoint as the model, when the endpoint fails the model every attempt, then the fallback answers there", async () => {
    const shared = await startFaultyUpstream(simulator.url);
    // A provider failing one model while serving another through the same endpoint.
    shared.setBodyPlan((body) =>
      body.includes('"model":"gamma-4-5"') ? { kind: "status", status: 503 } : { kind: "pass" },
    );
    const family = Object.fromEntries(
      modelFamilies.map((name) => [name, { baseUrl: shared.url, apiKey: "family-key" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
    const sharing = new UpstreamRegistry(family, {}, new Map(), {
      limits: { ...fastLimits, attemptsMax: 4 },
    });
    try {
      const withFallback: CatalogModel = { ...model, fallbacks: ["gamma-4-3"] };
      const call = sharing.call(withFallback, requestFor);

      const result = await call.generate(new AbortController().signal);

      expect(result.text.length).toBeGreaterThan(0);
      expect(call.answeringModel.slug).toBe("gamma-4-3");
      expect(
        call.attempts.map(({ endpoint, model: slug, status }) => `${endpoint}/${slug}/${status}`),
      ).toEqual(["gamma/gamma-4-5/503", "gamma/gamma-4-3/200"]);
    } finally {
      await sharing.close();
      await shared.close();
    }
  });

  it("never falls back when none is configured", async () => {
    const call = registry.call(model, requestFor);
    await expect(call.generate(new AbortController().signal)).rejects.toBeInstanceOf(UpstreamFailedError);
    expect(new Set(call.attempts.map((attempt) => attempt.model))).toEqual(new Set(["gamma-4-5"]));
  });
});
