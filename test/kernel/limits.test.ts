import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../../src/config";
import { ConfigError } from "../../src/kernel/config-error";
import {
  assertLimitRelations,
  billingLimits,
  databaseSessionLimits,
  defaultSettlementTimings,
  environmentRanges,
  limits,
  limitsInForce,
  readLimits,
  resilienceLimitDefaults,
  statementLimits,
  webhookLimits,
} from "../../src/kernel/limits";

/**
 * Every limit lives in src/kernel/limits.ts, and the relations between them are asserted when it loads: a
 * set of limits that contradict each other is refused with one line naming each broken relation.
 */

describe("the relations between limits", () => {
  it("given the limits in force, then they hold together", () => {
    expect(() => assertLimitRelations()).not.toThrow();
    expect(() => assertLimitRelations(limitsInForce)).not.toThrow();
  });

  it.each([
    [
      "a LISTEN reconnect that starts above its longest delay",
      {
        databaseSessionLimits: {
          ...databaseSessionLimits,
          listenReconnectDelayInitialMs: databaseSessionLimits.listenReconnectDelayMaxMs + 1,
        },
      },
      "databaseSessionLimits.listenReconnectDelayInitialMs ≤ databaseSessionLimits.listenReconnectDelayMaxMs",
    ],
    [
      "a charge job bigger than one pricing query",
      {
        billingLimits: {
          ...billingLimits,
          chargeJobRequestsMax: billingLimits.pricingRequestsPerQueryMax + 1,
        },
      },
      "billingLimits.chargeJobRequestsMax ≤ billingLimits.pricingRequestsPerQueryMax",
    ],
    [
      "a request-log batch bigger than its queue",
      { limits: { ...limits, requestLogBatchRowsMax: limits.requestLogQueueRowsMax + 1 } },
      "limits.requestLogBatchRowsMax ≤ limits.requestLogQueueRowsMax",
    ],
    [
      "a webhook's two host look-ups that could take its whole attempt",
      { webhookLimits: { ...webhookLimits, hostResolutionTimeoutMs: webhookLimits.deliveryTimeoutMs / 2 } },
      "2 × webhookLimits.hostResolutionTimeoutMs < webhookLimits.deliveryTimeoutMs",
    ],
    [
      "a settlements' drain as long as the stop's close bound",
      { limits: { ...limits, usageOutboxDrainMs: limits.shutdownCloseMs } },
      "limits.usageOutboxDrainMs < limits.shutdownCloseMs",
    ],
    [
      "a keep-alive timeout past the headers timeout",
      { limits: { ...limits, httpKeepAliveTimeoutMs: limits.httpHeadersTimeoutMs } },
      "limits.httpKeepAliveTimeoutMs < limits.httpHeadersTimeoutMs",
    ],
    [
      "a page default above its maximum",
      { readLimits: { ...readLimits, activityPageRowsDefault: readLimits.activityPageRowsMax + 1 } },
      "readLimits.activityPageRowsDefault ≤ readLimits.activityPageRowsMax",
    ],
    [
      "an export page bigger than what it pages through",
      {
        statementLimits: {
          ...statementLimits,
          exportAccountsPageSize: statementLimits.exportAccountsMax + 1,
        },
      },
      "statementLimits.exportAccountsPageSize ≤ statementLimits.exportAccountsMax",
    ],
    [
      "a stalled-job check no sooner than the lock it watches",
      { billingLimits: { ...billingLimits, reconcileUsageStalledCheckIntervalMs: 30_000 } },
      "billingLimits.reconcileUsageStalledCheckIntervalMs < billingLimits.reconcileUsageLockDurationMs",
    ],
    [
      "a sweep that re-enqueues usage whose own enqueue may still be on its way",
      { billingLimits: { ...billingLimits, pendingChargeAgeMs: billingLimits.chargeEnqueueTimeoutMs } },
      "billingLimits.chargeEnqueueLingerMs + billingLimits.chargeEnqueueTimeoutMs < billingLimits.pendingChargeAgeMs",
    ],
    [
      "a settlement timing default the environment would refuse",
      { defaultSettlementTimings: { ...defaultSettlementTimings, streamDeadlineMs: 2 * 86_400_000 } },
      "every defaultSettlementTimings value within environmentRanges.settlementTimingMs",
    ],
    [
      "an upstream default the environment would refuse",
      { resilienceLimitDefaults: { ...resilienceLimitDefaults, attemptsMax: 64 } },
      "every resilienceLimitDefaults value within its environmentRanges.upstream… range",
    ],
    [
      "a body the hold could not price",
      {
        environmentRanges: {
          ...environmentRanges,
          requestBodyBytes: { min: 1_024, max: 2_000_000_000_000 },
        },
      },
      "≤ chargeLimits.tokensPerRequestMax",
    ],
  ])("given %s, then the limits are refused naming the relation", (_case, change, relation) => {
    const contradicting = { ...limitsInForce, ...change };
    expect(() => assertLimitRelations(contradicting)).toThrow(ConfigError);
    expect(() => assertLimitRelations(contradicting)).toThrow(relation);
  });

  it("given two broken relations, then the one line names both", () => {
    const contradicting = {
      ...limitsInForce,
      limits: { ...limits, requestLogBatchRowsMax: 30_000, usageOutboxDrainMs: 30_000 },
    };
    expect(() => assertLimitRelations(contradicting)).toThrow(
      /requestLogBatchRowsMax ≤ .*; limits\.usageOutboxDrainMs < /,
    );
  });

  it("given upstream backoffs from the environment that contradict each other, then start is refused naming them", () => {
    expect(() => loadConfig({ UPSTREAM_BACKOFF_BASE_MS: "5000", UPSTREAM_BACKOFF_MAX_MS: "1000" })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ UPSTREAM_BACKOFF_BASE_MS: "5000", UPSTREAM_BACKOFF_MAX_MS: "1000" })).toThrow(
      "invalid configuration: UPSTREAM_BACKOFF_BASE_MS 5000 must be at most UPSTREAM_BACKOFF_MAX_MS 1000 (the first retry's wait, and the longest)",
    );
    expect(
      loadConfig({ UPSTREAM_BACKOFF_BASE_MS: "1000", UPSTREAM_BACKOFF_MAX_MS: "1000" }).upstreamResilience,
    ).toMatchObject({ backoffBaseMs: 1_000, backoffMaxMs: 1_000 });
  });

  it("given the defaults, then the environment's defaults are the limits' own", () => {
    const config = loadConfig({});
    expect(config.requestBodyBytesMax).toBe(environmentRanges.requestBodyBytesDefault);
    expect(config.settlementTimings).toEqual(defaultSettlementTimings);
    expect(config.upstreamResilience).toEqual(resilienceLimitDefaults);
  });

  it("given the compose file, then its supervisor waits longer than a stop with the default timings takes", async () => {
    const compose = parse(await readFile(new URL("../../docker-compose.yml", import.meta.url), "utf8"), {
      merge: true,
    }) as { "x-app": { stop_grace_period: string } };
    const graceMs = Number(/^(\d+)s$/.exec(compose["x-app"].stop_grace_period)?.[1]) * 1_000;
    // The process exits on its own after the drain, the cut grace and the close bound (main.ts, stopRole).
    const stopBoundMs =
      defaultSettlementTimings.shutdownDrainMs + limits.shutdownCutGraceMs + limits.shutdownCloseMs;
    expect(stopBoundMs).toBeLessThan(graceMs);
  });
});
