import { setTimeout as sleep } from "node:timers/promises";
import { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import type { EndpointHealth } from "../../src/gateway/generation/upstream-registry";
import { resilienceLimitDefaults } from "../../src/kernel/limits";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * Circuit breakers through the real gateway with the default retry and breaker limits (C13): a flaky
 * upstream whose retries serve never opens a breaker; an upstream down for 10 s opens it, the requests of
 * that window get 500/300 with Retry-After after their attempts, and traffic recovers within one open
 * period of the upstream's recovery; a model's breaker never touches another model of the same endpoint.
 */

type Outcome = {
  requestId: string;
  model: string;
  startedMs: number;
  served: boolean;
  status?: number;
  code?: number;
  message?: string;
  retryAfter?: string | null;
};

describe("circuit breakers with the default limits (C13)", () => {
  let simulator: Simulator;
  let zeta: FaultyUpstream;
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    simulator = await startSimulator({});
    zeta = await startFaultyUpstream(simulator.url);
    harness = await startGatewayHarness({
      label: "upstream_breaker",
      simulator: {},
      billing: {},
      service: {
        adminToken: testSecrets.adminToken,
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [
            family,
            { baseUrl: family === "zeta" ? zeta.url : simulator.url, apiKey: `secret-${family}` },
          ]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
      },
    });
    const session = await harness.session("breaker");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "breaker" }, "1000000");
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
    await zeta?.close();
    await simulator?.close();
  });

  async function ask(model: string, prompt: string): Promise<Outcome> {
    const startedMs = Date.now();
    const client = harness.openai(apiKey, { timeoutMs: 60_000 });
    try {
      const { response } = await client.chat.completions
        .create({ model, messages: [{ role: "user", content: prompt }], max_tokens: 8 })
        .withResponse();
      return { requestId: response.headers.get("x-request-id")!, model, startedMs, served: true };
    } catch (error) {
      if (!(error instanceof APIError)) throw error;
      return {
        requestId: error.headers!.get("x-request-id")!,
        model,
        startedMs,
        served: false,
        status: error.status,
        code: (error.error as { code?: number }).code,
        message: error.message,
        retryAfter: error.headers?.get("retry-after"),
      };
    }
  }

  async function breakerOf(model: string): Promise<EndpointHealth> {
    const response = await fetch(`${harness.url}/admin/upstreams`, {
      headers: { authorization: `Bearer ${testSecrets.adminToken}` },
    });
    const { data } = (await response.json()) as { data: EndpointHealth[] };
    return data.find((health) => health.endpoint === "zeta" && health.model === model)!;
  }

  async function settlementTypes(requestIds: readonly string[]): Promise<Map<string, string[]>> {
    const result = await harness.service.ledger.pool.query<{ stream_id: string; types: string[] }>(
      `SELECT stream_id, array_agg(type ORDER BY stream_version) AS types
       FROM ledger_events WHERE stream_id = ANY($1) GROUP BY stream_id`,
      [requestIds.map((requestId) => `usage-${requestId}`)],
    );
    return new Map(result.rows.map((row) => [row.stream_id.slice("usage-".length), row.types]));
  }

  it("serves all of 200 requests at an upstream failing half the attempts (500 and 503), each billed once, breaker closed", async () => {
    // Each distinct request's first attempt fails, its retry is served: half of all attempts fail.
    const seen = new Set<string>();
    zeta.setBodyPlan((body, index) => {
      if (seen.has(body)) return { kind: "pass" };
      seen.add(body);
      return { kind: "status", status: index % 4 === 0 ? 500 : 503 };
    });
    const outcomes: Outcome[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 200) outcomes.push(await ask("zeta-pro3", `Flaky request ${next++}`));
      }),
    );

    expect(outcomes.filter((outcome) => !outcome.served)).toEqual([]);
    expect(zeta.served).toHaveLength(400);
    expect(zeta.served.filter((served) => served.fault === "pass")).toHaveLength(200);
    expect(await breakerOf("zeta-pro3")).toMatchObject({ breakerState: "closed", recentFailedRequests: 0 });
    const requestIds = outcomes.map((outcome) => outcome.requestId);
    await expect
      .poll(
        async () =>
          [...(await settlementTypes(requestIds)).values()].filter((types) => types.includes("UsageCharged"))
            .length,
        {
          timeout: 60_000,
          interval: 250,
        },
      )
      .toBe(200);
    for (const types of (await settlementTypes(requestIds)).values())
      expect(types).toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
  }, 180_000);

  it("opens on an upstream failing every attempt for 10 s: 500/300 with Retry-After after attempts, recovery within one open period, other models untouched", async () => {
    const openMs = resilienceLimitDefaults.breakerOpenMs;
    const failingForMs = 10_000;
    const failUntilMs = Date.now() + failingForMs;
    zeta.setBodyPlan((body) =>
      body.includes('"zeta-mini"') && Date.now() < failUntilMs
        ? { kind: "status", status: 503 }
        : { kind: "pass" },
    );
    const runUntilMs = failUntilMs + openMs + 3_000;
    const outcomes: Outcome[] = [];
    let sequence = 0;
    // Twelve clients on the failing model, pausing a quarter second between requests, and one client on
    // another model of the same endpoint.
    const clientLoop = (model: string) => async () => {
      while (Date.now() < runUntilMs) {
        outcomes.push(await ask(model, `Request ${sequence++} to ${model}`));
        await sleep(250);
      }
    };
    await Promise.all(
      [...Array.from({ length: 12 }, () => clientLoop("zeta-mini")), clientLoop("zeta-pro2")].map((loop) =>
        loop(),
      ),
    );

    const failing = outcomes.filter((outcome) => outcome.model === "zeta-mini");
    const failed = failing.filter((outcome) => !outcome.served);
    expect(failed.length).toBeGreaterThan(0);
    for (const outcome of failed) {
      expect(outcome).toMatchObject({ status: 500, code: 300 });
      // Every failed request made its attempts: an open breaker never answered by itself.
      expect(outcome.message).toMatch(/upstream failed \(HTTP 503\).*; [1-8] attempts? made/);
      expect(outcome.message).not.toContain("0 attempts made");
    }
    // The breaker opened: requests then made one attempt each and were told when the next probe goes.
    const whileOpen = failed.filter((outcome) => outcome.message!.includes("circuit open"));
    expect(whileOpen.length).toBeGreaterThan(0);
    for (const outcome of whileOpen) {
      const seconds = Number(outcome.retryAfter);
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(openMs / 1_000);
    }
    expect(whileOpen.some((outcome) => /; 1 attempt made/.test(outcome.message!))).toBe(true);
    // Recovery: every request started one open period after the upstream recovered was served.
    const afterRecovery = failing.filter((outcome) => outcome.startedMs >= failUntilMs + openMs);
    expect(afterRecovery.length).toBeGreaterThan(0);
    expect(afterRecovery.filter((outcome) => !outcome.served)).toEqual([]);
    expect((await breakerOf("zeta-mini")).breakerState).toBe("closed");
    // Another model of the same endpoint was served throughout.
    const other = outcomes.filter((outcome) => outcome.model === "zeta-pro2");
    expect(other.length).toBeGreaterThan(10);
    expect(other.filter((outcome) => !outcome.served)).toEqual([]);
    // Each request settled once: served ones recorded (and charged), failed ones voided.
    const types = await settlementTypes(outcomes.map((outcome) => outcome.requestId));
    for (const outcome of outcomes)
      expect(types.get(outcome.requestId)?.slice(0, 2)).toEqual(
        outcome.served ? ["UsageAuthorized", "UsageRecorded"] : ["UsageAuthorized", "UsageVoided"],
      );
  }, 180_000);
});
