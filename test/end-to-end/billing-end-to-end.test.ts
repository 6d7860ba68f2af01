import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { calculateCharge, chargeInputOfBreakdown } from "../../src/billing/charging/charge-calculation";
import { chargeBreakdownOfRecorded } from "../../src/billing/charging/recorded-charge-breakdown";
import { Money } from "../../src/kernel/money";
import { seoulDateOf } from "../../src/kernel/seoul-calendar";
import type { ChargeBreakdownData } from "../../src/ledger/events";
import { balanceChecksum, rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * The whole product with the official openai client: top up, generate on personal and organization keys in
 * both formats, JSON and streamed; every usage is charged exactly once by the worker, balances equal the
 * top-up minus the exact sum of charges, the ledger verifies, and a rebuild reproduces the balances.
 */

interface BillingRow {
  requestId: string;
  amountWon: string;
  breakdown: ChargeBreakdownData;
}

const backends = [
  ["PostgreSQL queue", undefined],
  ["Redis queue", process.env.REDIS_URL],
] as const;

describe.each(backends)("billing end to end on the %s", (label, redisUrl) => {
  let harness: GatewayHarness;
  const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${harness.url}/admin${path}`, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });

  beforeAll(async () => {
    if (label === "Redis queue" && !redisUrl)
      throw new Error("REDIS_URL must be set for the Redis queue tests");
    harness = await startGatewayHarness({
      label: label === "Redis queue" ? "e2e_redis" : "e2e_pg",
      billing: redisUrl ? { redisUrl } : {},
      service: { adminToken: testSecrets.adminToken },
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  it("charges every request exactly once and keeps balances exact", async () => {
    // Given credit, a price, today's FX rate and an organization discount, set through the admin API
    expect(
      (
        await admin("/accounts/user/alice/credits", {
          method: "POST",
          body: { amountWon: "10000", reference: "e2e" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin("/accounts/organization/acme/credits", {
          method: "POST",
          body: { amountWon: "10000", reference: "e2e" },
        })
      ).status,
    ).toBe(201);
    const price = { inputUsdPer1M: "3", outputUsdPer1M: "15", cachedInputUsdPer1M: "0.3" };
    expect((await admin("/models/delta-4.6-sonnet/price", { method: "PUT", body: price })).status).toBe(200);
    expect(
      (
        await admin("/fx-rates", {
          method: "POST",
          body: { appliesOn: seoulDateOf(new Date()), rate: "1483.40" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await admin("/discounts", {
          method: "PUT",
          body: { model: null, organizationId: "acme", rate: "0.15" },
        })
      ).status,
    ).toBe(200);

    const session = await harness.session("alice", "acme");
    const personal = harness.openai((await harness.issueKey(session)).key);
    const organization = harness.openai((await harness.issueKey(session, { isOrganization: true })).key);

    // When requests are made on both keys, in both formats, JSON and streamed
    for (const client of [personal, organization]) {
      await client.chat.completions.create({
        model: "delta-4.6-sonnet",
        messages: [{ role: "user", content: "One" }],
      });
      for await (const _ of await client.chat.completions.create({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: "Two" }],
        stream: true,
      })) {
        // drain
      }
      await client.responses.create({ model: "beta-3-flash", input: "Three" });
      await client.responses.stream({ model: "zeta-mini", input: "Four" }).finalResponse();
    }

    // Then each usage is charged once, and the balances are the top-up minus the exact sum
    const charged = async (account: string) => {
      const response = await admin(`/billing?account=${account}`);
      return ((await response.json()) as { data: BillingRow[] }).data;
    };
    await expect.poll(async () => (await charged("user:alice")).length, { timeout: 30_000 }).toBe(4);
    await expect.poll(async () => (await charged("organization:acme")).length, { timeout: 30_000 }).toBe(4);

    for (const [account, path] of [
      ["user:alice", "/accounts/user/alice"],
      ["organization:acme", "/accounts/organization/acme"],
    ] as const) {
      const rows = await charged(account);
      const total = rows.reduce((sum, row) => sum.plus(row.amountWon), new Money(0));
      const balance = (await (await admin(path)).json()) as { balanceWon: string; pendingWon: string };
      expect(new Money(balance.balanceWon).equals(new Money("10000").minus(total))).toBe(true);
      expect(new Money(balance.pendingWon).isZero()).toBe(true);
      for (const row of rows) {
        // Finance recomputes every won from the breakdown alone.
        const recomputed = calculateCharge(chargeInputOfBreakdown(chargeBreakdownOfRecorded(row.breakdown)));
        expect(new Money(recomputed.amountWon).equals(row.amountWon)).toBe(true);
        expect(row.breakdown.fxRateKrwPerUsd).toBe("1483.4");
        expect(row.breakdown.discountRate).toBe(account === "organization:acme" ? "0.15" : "0");
      }
      const sonnet = rows.find((row) => row.breakdown.inputUsdPerMillionTokens === "3");
      expect(sonnet).toBeDefined();
    }
    // And each was pended at its charge, discount included: what its account could not spend meanwhile
    // (C10) is what it then paid.
    const pended = await harness.service.ledger.pool.query<{ pending: string; charged: string }>(
      `SELECT recorded.data->>'pendingWon' AS pending, charged.data->>'amountWon' AS charged
       FROM ledger_events recorded
       JOIN ledger_events charged ON charged.stream_id = recorded.stream_id AND charged.type = 'UsageCharged'
       WHERE recorded.type = 'UsageRecorded'`,
    );
    expect(pended.rows).toHaveLength(8);
    expect(pended.rows.filter(({ pending, charged }) => !new Money(pending).equals(charged))).toEqual([]);

    const sessionBalance = await fetch(`${harness.url}/llm/balance`, {
      headers: { authorization: `Bearer ${session}` },
    });
    const balances = (await sessionBalance.json()) as {
      user: { balanceWon: string };
      organization: { balanceWon: string };
    };
    const aliceRows = await charged("user:alice");
    expect(
      new Money(balances.user.balanceWon).equals(
        new Money(10000).minus(aliceRows.reduce((sum, row) => sum.plus(row.amountWon), new Money(0))),
      ),
    ).toBe(true);

    // The ledger verifies, and a rebuild reproduces the same balances
    const context = {
      pool: harness.service.ledger.pool,
      store: harness.service.ledger.store,
      projections: allProjections,
    };
    expect(await verifyProjections(context)).toEqual([]);
    const before = await balanceChecksum(harness.service.ledger.pool);
    const rebuilt = await rebuildProjections(context, { batchSizeMax: 1_000 });
    expect(rebuilt.checksum).toEqual(before);
    expect(await verifyProjections(context)).toEqual([]);
  }, 90_000);
});
