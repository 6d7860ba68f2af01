import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFxRateRefresher } from "../../../src/billing/fx/fx-rate-refresh";
import { createKoreaeximClient, type KoreaeximClient } from "../../../src/billing/fx/koreaexim-client";
import type { RecordedEventOf } from "../../../src/ledger/store/event-store";
import { silentLogger, usageRecorded } from "../../billing/billing-ledger-fixtures";
import { type FakeKoreaeximServer, startFakeKoreaeximServer } from "../../billing/fake-koreaexim-server";
import {
  adminToken,
  type BillingApiHarness,
  chargeRecordedUsage,
  startBillingApi,
} from "./billing-api-harness";

/**
 * The admin API (C6) through the real HTTP edge: every endpoint, its validation (money as decimal strings
 * only, 400/100; unknown slug 404/120; no admin token 401/110), and that every write is an event carrying
 * the admin and the request id.
 */

const authkey = "TestAuthkey0123456789SecretValue";
const acme = { kind: "organization", id: "acme" } as const;
const alice = { kind: "user", id: "alice" } as const;

let api: BillingApiHarness;
let bank: FakeKoreaeximServer;
let client: KoreaeximClient;
let sequence = 0;

beforeEach(async () => {
  bank = await startFakeKoreaeximServer({ authkey });
  client = createKoreaeximClient({
    authkey,
    url: bank.url,
    limits: { requestTimeoutMs: 300, attemptsPerDateMax: 1 },
    sleep: async () => {},
  });
  api = await startBillingApi(`admin_api_${sequence++}`, {
    fxRateRefresher: (store, clock) =>
      createFxRateRefresher({ store, clock, logger: silentLogger, authkey, url: bank.url, client }),
  });
});

afterEach(async () => {
  await api.close();
  await client.close();
  await bank.close();
});

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

async function expectError(response: Response, httpStatus: number, applicationCode: number): Promise<string> {
  expect(response.status).toBe(httpStatus);
  const body = await json(response);
  expect(body.status).toBe(applicationCode);
  return String(body.message);
}

/** Price 2 / 4 / 1 USD per 1M for alpha-5.4 and 1000 KRW per USD, both in force from api.now. */
async function givenPricing(): Promise<void> {
  expect(
    (
      await api.admin("PUT", "/models/alpha-5.4/price", {
        inputUsdPer1M: "2",
        outputUsdPer1M: "4",
        cachedInputUsdPer1M: "1",
      })
    ).status,
  ).toBe(200);
  expect((await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" })).status).toBe(201);
}

function charge(requestId: string): Promise<void> {
  return chargeRecordedUsage(api, requestId);
}

describe("admin authentication", () => {
  it("refuses a missing or wrong admin token with 401/110", async () => {
    await expectError(await fetch(`${api.url}/admin/fx-rates`), 401, 110);
    await expectError(
      await api.admin("GET", "/fx-rates", undefined, { authorization: "Bearer nope" }),
      401,
      110,
    );
    // The whole token is compared: one that differs only at its end, or runs past it, is refused too.
    for (const nearly of [`${adminToken.slice(0, -1)}x`, `${adminToken}x`])
      await expectError(
        await api.admin("GET", "/fx-rates", undefined, { authorization: `Bearer ${nearly}` }),
        401,
        110,
      );
  });
});

describe("POST /admin/accounts/:kind/:id/credits", () => {
  it("tops up and answers the new balance; the event names the admin and the request", async () => {
    // When
    const first = await api.admin("POST", "/accounts/user/alice/credits", {
      amountWon: "10000",
      reference: "invoice 7",
    });
    const second = await api.admin("POST", "/accounts/user/alice/credits", {
      amountWon: "0.55",
      reference: "",
    });

    // Then
    expect(first.status).toBe(201);
    expect(await json(first)).toEqual({ balanceWon: "10000" });
    expect(await json(second)).toEqual({ balanceWon: "10000.55" });
    const [event] = await api.ledger.store.readStream("account-user-alice");
    expect(event).toMatchObject({
      type: "CreditToppedUp",
      data: { account: alice, amountWon: "10000", reference: "invoice 7" },
      metadata: { actor: "admin", correlationId: first.headers.get("x-request-id") },
    });
  });

  it.each([
    ["a JSON number", { amountWon: 10000 }],
    ["three decimal places", { amountWon: "1.005" }],
    ["zero", { amountWon: "0" }],
    ["a negative amount", { amountWon: "-5" }],
    ["an exponent", { amountWon: "1e4" }],
    ["no amount", {}],
  ])("refuses %s with 400/100", async (_case, body) => {
    await expectError(await api.admin("POST", "/accounts/user/alice/credits", body), 400, 100);
    expect(await api.ledger.store.readStream("account-user-alice")).toEqual([]);
  });

  it("refuses an unknown account kind and a body that is not JSON with 400/100", async () => {
    await expectError(await api.admin("POST", "/accounts/team/x/credits", { amountWon: "1" }), 400, 100);
    expect(
      await expectError(await api.admin("POST", "/accounts/user/x/credits", "{not json"), 400, 100),
    ).toBe("Request body is not valid JSON");
  });

  it.each([
    ["a line break", "invoice\n7", "U+000A"],
    ["a right-to-left override", "invoice \u202E7 eciovni", "U+202E"],
    ["a zero-width space", "invoice\u200B7", "U+200B"],
  ])(
    "refuses a reference holding %s with 400/100 naming it, and credits nothing",
    async (_name, reference, codePoint) => {
      const before = await api.admin("GET", "/accounts/user/reference-check");
      const refusal = await expectError(
        await api.admin("POST", "/accounts/user/reference-check/credits", { amountWon: "100", reference }),
        400,
        100,
      );
      expect(refusal.startsWith("reference: must not contain ")).toBe(true);
      expect(refusal.endsWith(`; it has ${codePoint}`)).toBe(true);
      expect(await (await api.admin("GET", "/accounts/user/reference-check")).json()).toEqual(
        await before.json(),
      );
    },
  );

  it.each(["5", '"10000"', "null", "true"])(
    "refuses a body of JSON that is no object (%s) with 400/100, saying what it must be",
    async (body) => {
      expect(await expectError(await api.admin("POST", "/accounts/user/x/credits", body), 400, 100)).toBe(
        "Request body must be a JSON object",
      );
    },
  );
});

describe("POST /admin/accounts/:kind/:id/credits with an Idempotency-Key", () => {
  const topUp = (idempotencyKey: string, amountWon = "10000", reference = "invoice 8") =>
    api.admin(
      "POST",
      "/accounts/user/alice/credits",
      { amountWon, reference },
      { "idempotency-key": idempotencyKey },
    );
  const toppedUp = async () => (await api.ledger.store.readStream("account-user-alice")).length;

  it("given the same top-up sent three times, then the account is credited once and each answer is that balance", async () => {
    // When
    const answers = [await topUp("topup-7f3a"), await topUp("topup-7f3a"), await topUp("topup-7f3a")];

    // Then
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201]);
    for (const answer of answers) expect(await json(answer)).toEqual({ balanceWon: "10000" });
    expect(await toppedUp()).toBe(1);
    expect(await json(await topUp("topup-7f3b"))).toEqual({ balanceWon: "20000" });
    expect(await toppedUp()).toBe(2);
  });

  it("given a key already used for another amount or reference, then 400/100 and nothing is credited", async () => {
    // Given
    expect((await topUp("topup-91c0")).status).toBe(201);

    // When / Then
    expect(await expectError(await topUp("topup-91c0", "20000"), 400, 100)).toContain("Idempotency-Key");
    await expectError(await topUp("topup-91c0", "10000", "invoice 9"), 400, 100);
    expect(await toppedUp()).toBe(1);
  });

  it("given the same key sent at once with two amounts and five times with one, then one top-up of each key is credited", async () => {
    // When
    const twins = await Promise.all([topUp("topup-a1", "100"), topUp("topup-a1", "200")]);
    const repeats = await Promise.all(Array.from({ length: 5 }, () => topUp("topup-b2", "1000")));

    // Then: one twin credited, the other refused; the five repeats are one top-up
    const statuses = twins.map((answer) => answer.status).sort();
    expect(statuses).toEqual([201, 400]);
    expect(repeats.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    const stored = await api.ledger.store.readStream("account-user-alice");
    expect(stored).toHaveLength(2);
    const credited = stored.map((event) => (event.data as { amountWon: string }).amountWon);
    expect(credited.filter((amount) => amount === "1000")).toHaveLength(1);
    expect(["100", "200"]).toContain(credited.find((amount) => amount !== "1000"));
  });

  it("given a key with a slash used on one account, when an account whose id holds that slash tops up with the key's rest, then each is credited once, apart", async () => {
    // Given: "x/y" on alice
    expect((await topUp("x/y", "100")).status).toBe(201);

    // When: "y" on "alice/x", whose account and key read as alice's and "x/y" when joined by a slash
    const other = () =>
      api.admin(
        "POST",
        `/accounts/user/${encodeURIComponent("alice/x")}/credits`,
        { amountWon: "200", reference: "invoice 8" },
        { "idempotency-key": "y" },
      );
    const answers = [await other(), await other()];

    // Then
    expect(answers.map((answer) => answer.status)).toEqual([201, 201]);
    for (const answer of answers) expect(await json(answer)).toEqual({ balanceWon: "200" });
    expect(await toppedUp()).toBe(1);
    expect(await api.ledger.store.readStream("account-user-alice/x")).toHaveLength(1);
  });

  it.each([
    ["a space", "two words"],
    ["a character beyond ASCII", "clé-1"],
    ["too long", "k".repeat(256)],
  ])("refuses a key with %s with 400/100", async (_case, idempotencyKey) => {
    await expectError(await topUp(idempotencyKey), 400, 100);
    expect(await toppedUp()).toBe(0);
  });
});

describe("a top-up answered 503, then retried with its Idempotency-Key", () => {
  it("given the projections held back past the wait, when the client retries once they caught up, then the account is credited once", async () => {
    // Given: an admin API whose writes wait 300 ms, and a write transaction open elsewhere on the server
    await api.close();
    api = await startBillingApi(`admin_api_${sequence++}`, { projectionWaitTimeoutMs: 300 });
    const openTransaction = new pg.Client({ connectionString: api.ledger.database.url });
    await openTransaction.connect();
    await openTransaction.query("BEGIN");
    await openTransaction.query("SELECT pg_current_xact_id()");
    const send = () =>
      api.admin(
        "POST",
        "/accounts/user/alice/credits",
        { amountWon: "10000", reference: "invoice 10" },
        { "idempotency-key": "topup-5d21" },
      );

    // When: the first attempt is recorded but not yet projected
    try {
      expect(await expectError(await send(), 503, 300)).toContain("The change was recorded");
    } finally {
      await openTransaction.query("COMMIT");
      await openTransaction.end();
    }
    // A client retries a 503 with the same key, pausing between attempts, until it has an answer
    let retried = await send();
    for (let attempt = 1; retried.status === 503 && attempt < 50; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      retried = await send();
    }

    // Then
    expect(retried.status).toBe(201);
    expect(await json(retried)).toEqual({ balanceWon: "10000" });
    expect(await api.ledger.store.readStream("account-user-alice")).toHaveLength(1);
  });
});

describe("GET /admin/accounts/:kind/:id", () => {
  it("shows the balance and the uncharged usage at the cost recorded with it, which its charge moves into the balance", async () => {
    // Given: ₩10,000, an organization discount of 50%, and two usages started after the prices were set
    await givenPricing();
    await api.admin("POST", "/accounts/organization/acme/credits", { amountWon: "10000" });
    expect(
      (await api.admin("PUT", "/discounts", { model: null, organizationId: "acme", rate: "0.5" })).status,
    ).toBe(200);
    await api.ledger.append(
      usageRecorded({
        requestId: "req_a",
        account: acme,
        tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
        startedAt: "2026-11-20T02:00:00.000Z",
        pendingWon: "1000",
      }),
      usageRecorded({
        requestId: "req_b",
        account: acme,
        tokens: { input: 0, cached: 0, output: 1_000_000, reasoning: 0 },
        startedAt: "2026-11-20T02:00:00.000Z",
        pendingWon: "2000",
      }),
    );

    // When
    const before = await waitForPending("organization/acme", "3000");
    await charge("req_a");
    const after = await waitForPending("organization/acme", "2000");

    // Then: A = 2 USD × 1000 × 0.5 = ₩1000, B = 4 USD × 1000 × 0.5 = ₩2000, both priceable
    const noHold = { heldWon: "0", unpriceablePending: [] };
    expect(before).toEqual({
      kind: "organization",
      id: "acme",
      balanceWon: "10000",
      pendingWon: "3000",
      ...noHold,
    });
    expect(after).toEqual({
      kind: "organization",
      id: "acme",
      balanceWon: "9000",
      pendingWon: "2000",
      ...noHold,
    });
  });

  it("shows a pending correction at the difference it will be charged, not at its whole usage", async () => {
    // Given: a sweep's estimate charged (A = 1,000 input tokens × 2 USD/1M × 1000 = ₩2), then the gateway's
    // own settlement correcting it (B = 1,000,000 output tokens × 4 USD/1M × 1000 = ₩4000), not charged yet
    await givenPricing();
    await api.admin("POST", "/accounts/user/late/credits", { amountWon: "10000" });
    const late = { kind: "user" as const, id: "late" };
    const startedAt = "2026-11-20T02:00:00.000Z";
    await api.ledger.append(
      usageRecorded({
        requestId: "req_late",
        account: late,
        tokens: { input: 1_000, cached: null, output: 0, reasoning: null },
        startedAt,
        pendingWon: "2",
      }),
    );
    await charge("req_late");
    const [estimate] = await api.ledger.store.readStream("usage-req_late");
    const correction = usageRecorded({
      requestId: "req_late",
      account: late,
      tokens: { input: 0, cached: 0, output: 1_000_000, reasoning: 0 },
      startedAt,
      heldWon: "0",
      pendingWon: "3998",
    });
    const correcting = correction.events[0]!.event as { data: Record<string, unknown> };
    correcting.data.corrects = { eventId: estimate!.eventId, pendingWon: "2" };
    await api.ledger.append({ ...correction, expectedVersion: "any" });

    // Then: pending is B − A, what the reconciler then charges for the correction
    expect(await waitForPending("user/late", "3998")).toMatchObject({ pendingWon: "3998" });
    await charge("req_late");
    const charges = (await api.ledger.store.readStream("usage-req_late")).filter(
      (event) => event.type === "UsageCharged",
    ) as RecordedEventOf<"UsageCharged">[];
    expect(charges.map((event) => event.data.amountWon)).toEqual(["2.000000", "3998.000000"]);
    expect((await waitForPending("user/late", "0")).pendingWon).toBe("0");
  });

  it("shows ₩0 for an account nobody topped up", async () => {
    expect(await json(await api.admin("GET", "/accounts/user/nobody"))).toEqual({
      kind: "user",
      id: "nobody",
      balanceWon: "0",
      pendingWon: "0",
      heldWon: "0",
      unpriceablePending: [],
    });
  });
});

async function waitForPending(path: string, pendingWon: string): Promise<Record<string, unknown>> {
  let body: Record<string, unknown> = {};
  for (let attempt = 0; attempt < 200; attempt += 1) {
    body = await json(await api.admin("GET", `/accounts/${path}`));
    if (body.pendingWon === pendingWon) return body;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return body;
}

describe("PUT /admin/models/:slug/price", () => {
  it("records the price, in force from now, and answers it", async () => {
    // When
    const response = await api.admin("PUT", "/models/beta-3-flash/price", {
      inputUsdPer1M: "0.35",
      outputUsdPer1M: "2.75",
    });

    // Then: an omitted cached price is the input price
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({
      model: "beta-3-flash",
      inputUsdPer1M: "0.35",
      outputUsdPer1M: "2.75",
      cachedInputUsdPer1M: "0.35",
      effectiveAt: api.now.value.toISOString(),
    });
    const [event] = await api.ledger.store.readStream("model-price-beta-3-flash");
    expect(event).toMatchObject({ type: "ModelPriceSet", metadata: { actor: "admin" } });
  });

  it("given five prices set in one millisecond, then the last one set is in force, for reads and for charges", async () => {
    expect((await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" })).status).toBe(
      201,
    );
    for (const inputUsdPer1M of ["1", "2", "3", "4", "5"]) {
      const set = await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M, outputUsdPer1M: "1" });
      expect(set.status).toBe(200);
    }

    const prices = (await json(await api.admin("GET", "/prices"))).data as Record<string, unknown>[];
    expect(prices.find((price) => price.model === "alpha-5.4")).toMatchObject({ inputUsdPer1M: "5" });
    await api.ledger.append(
      usageRecorded({
        requestId: "req_same_millisecond",
        account: alice,
        tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
        startedAt: "2026-11-20T02:00:00.000Z",
      }),
    );
    await charge("req_same_millisecond");
    const [charged] = (await api.ledger.store.readStream("usage-req_same_millisecond")).filter(
      (event) => event.type === "UsageCharged",
    ) as RecordedEventOf<"UsageCharged">[];
    // 1M input tokens at the last price, 5 USD, and ₩1000 per USD
    expect(charged?.data.amountWon).toBe("5000.000000");
  });

  it("given a price set by a clock 2 s ahead, when another is set by a clock behind it, then the later one is in force from the earlier one's instant, for reads and for charges", async () => {
    // Given: the price set by a gateway whose clock reads 01:00:02
    expect((await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" })).status).toBe(
      201,
    );
    api.now.value = new Date("2026-11-20T01:00:02.000Z");
    await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "1", outputUsdPer1M: "1" });

    // When: the next price is set by one whose clock reads 01:00:00
    api.now.value = new Date("2026-11-20T01:00:00.000Z");
    const set = await api.admin("PUT", "/models/alpha-5.4/price", {
      inputUsdPer1M: "2",
      outputUsdPer1M: "1",
    });

    // Then
    expect(await json(set)).toMatchObject({ inputUsdPer1M: "2", effectiveAt: "2026-11-20T01:00:02.000Z" });
    const prices = (await json(await api.admin("GET", "/prices"))).data as Record<string, unknown>[];
    expect(prices.find((price) => price.model === "alpha-5.4")).toMatchObject({ inputUsdPer1M: "2" });
    await api.ledger.append(
      usageRecorded({
        requestId: "req_after_clock_behind",
        account: alice,
        tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
        startedAt: "2026-11-20T02:00:00.000Z",
      }),
    );
    await charge("req_after_clock_behind");
    const [charged] = (await api.ledger.store.readStream("usage-req_after_clock_behind")).filter(
      (event) => event.type === "UsageCharged",
    ) as RecordedEventOf<"UsageCharged">[];
    // 1M input tokens at the later price, 2 USD, and ₩1000 per USD
    expect(charged?.data.amountWon).toBe("2000.000000");
  });

  it("answers 404/120 for an unknown slug and 400/100 for numbers or out-of-range prices", async () => {
    await expectError(
      await api.admin("PUT", "/models/gpt-9/price", { inputUsdPer1M: "1", outputUsdPer1M: "1" }),
      404,
      120,
    );
    await expectError(
      await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: 1, outputUsdPer1M: "1" }),
      400,
      100,
    );
    await expectError(
      await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "-1", outputUsdPer1M: "1" }),
      400,
      100,
    );
    await expectError(
      await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "1000000", outputUsdPer1M: "1" }),
      400,
      100,
    );
  });
});

describe("PUT /admin/discounts", () => {
  it("records a rule for a scope", async () => {
    const response = await api.admin("PUT", "/discounts", {
      model: "alpha-5.4",
      organizationId: null,
      rate: "0.15",
    });
    expect(response.status).toBe(200);
    expect(await json(response)).toMatchObject({ model: "alpha-5.4", organizationId: null, rate: "0.15" });
    const [event] = await api.ledger.store.readStream("discount-alpha-5.4:*");
    expect(event).toMatchObject({
      type: "DiscountSet",
      data: { model: "alpha-5.4", organizationId: null, rate: "0.15" },
    });
  });

  it("answers 404/120 for an unknown model and 400/100 for a rate outside [0, 1] or a number", async () => {
    await expectError(
      await api.admin("PUT", "/discounts", { model: "nope", organizationId: null, rate: "0.1" }),
      404,
      120,
    );
    await expectError(
      await api.admin("PUT", "/discounts", { model: null, organizationId: "acme", rate: "1.5" }),
      400,
      100,
    );
    await expectError(
      await api.admin("PUT", "/discounts", { model: null, organizationId: "acme", rate: 0.1 }),
      400,
      100,
    );
  });
});

describe("DELETE /admin/discounts", () => {
  it("ends a scope's rule: requests started after it get the next less specific rule, those before keep it", async () => {
    // Given: acme's 50% and a 20% for alpha-5.4 at acme, both in force from 01:00
    await givenPricing();
    await api.admin("POST", "/accounts/organization/acme/credits", { amountWon: "10000" });
    const organizationRule = { model: null, organizationId: "acme", rate: "0.5" };
    expect((await api.admin("PUT", "/discounts", organizationRule)).status).toBe(200);
    const modelRule = { model: "alpha-5.4", organizationId: "acme", rate: "0.2" };
    expect((await api.admin("PUT", "/discounts", modelRule)).status).toBe(200);

    // When: the model's rule is removed at 03:00
    api.now.value = new Date("2026-11-20T03:00:00.000Z");
    const removed = await api.admin("DELETE", "/discounts?model=alpha-5.4&organizationId=acme");

    // Then: the event says who ended it and when; the organization's rule is the one in force
    expect(removed.status).toBe(200);
    expect(await json(removed)).toEqual({
      model: "alpha-5.4",
      organizationId: "acme",
      rate: null,
      effectiveAt: "2026-11-20T03:00:00.000Z",
    });
    expect((await api.ledger.store.readStream("discount-alpha-5.4:acme")).at(-1)).toMatchObject({
      type: "DiscountSet",
      data: { model: "alpha-5.4", organizationId: "acme", rate: null },
      metadata: { actor: "admin", correlationId: removed.headers.get("x-request-id") },
    });
    expect((await json(await api.admin("GET", "/discounts"))).data).toEqual([
      { ...organizationRule, effectiveAt: "2026-11-20T01:00:00.000Z" },
    ]);
    const history = (await json(await api.admin("GET", "/discounts/history"))).data as {
      rate: string | null;
    }[];
    expect(history.map((change) => change.rate)).toEqual([null, "0.2", "0.5"]);

    // And: 1M input tokens at 2 USD and ₩1000 per USD: ₩2000 less 20% before the removal, less 50% after
    await api.ledger.append(
      ...["02:59:59.999", "03:00:00.001"].map((time, index) =>
        usageRecorded({
          requestId: `req_removal_${index}`,
          account: acme,
          tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
          startedAt: `2026-11-20T${time}Z`,
        }),
      ),
    );
    await charge("req_removal_0");
    await charge("req_removal_1");
    const charged = async (requestId: string) => {
      const events = (await api.ledger.store.readStream(`usage-${requestId}`)).filter(
        (event) => event.type === "UsageCharged",
      ) as RecordedEventOf<"UsageCharged">[];
      return events.map((event) => [event.data.amountWon, event.data.breakdown.discountRate]);
    };
    expect(await charged("req_removal_0")).toEqual([["1600.000000", "0.2"]]);
    expect(await charged("req_removal_1")).toEqual([["1000.000000", "0.5"]]);
  });

  it("answers 404/120 for a scope without a rule or an unknown model, and 400/100 for a parameter it does not know", async () => {
    await expectError(await api.admin("DELETE", "/discounts?organizationId=acme"), 404, 120);
    expect(
      (await api.admin("PUT", "/discounts", { model: null, organizationId: null, rate: "0.1" })).status,
    ).toBe(200);
    // A misspelt scope is refused, not read as "any" (which would end the global rule).
    await expectError(await api.admin("DELETE", "/discounts?modle=alpha-5.4"), 400, 100);
    await expectError(await api.admin("DELETE", "/discounts?model=nope"), 404, 120);
    expect((await api.admin("DELETE", "/discounts")).status).toBe(200);
    await expectError(await api.admin("DELETE", "/discounts"), 404, 120);
    expect((await json(await api.admin("GET", "/discounts"))).data).toEqual([]);
  });
  it("given a rule set by a clock 2 s ahead, when it is removed by a clock behind it, then no rule is in force and removing it again is 404/120", async () => {
    // Given
    api.now.value = new Date("2026-11-20T01:00:02.000Z");
    await api.admin("PUT", "/discounts", { model: null, organizationId: null, rate: "0.1" });

    // When
    api.now.value = new Date("2026-11-20T01:00:00.000Z");
    const removed = await api.admin("DELETE", "/discounts");

    // Then
    expect(await json(removed)).toMatchObject({ rate: null, effectiveAt: "2026-11-20T01:00:02.000Z" });
    expect((await json(await api.admin("GET", "/discounts"))).data).toEqual([]);
    await expectError(await api.admin("DELETE", "/discounts"), 404, 120);
  });

  it("given a scope in a body, then 400/100 and nothing is removed: the scope is the query's", async () => {
    expect(
      (await api.admin("PUT", "/discounts", { model: null, organizationId: null, rate: "0.1" })).status,
    ).toBe(200);
    await expectError(
      await api.admin("DELETE", "/discounts", { model: "alpha-5.4", organizationId: null }),
      400,
      100,
    );
    expect((await json(await api.admin("GET", "/discounts"))).data).toMatchObject([{ rate: "0.1" }]);
  });

  it("given an organization named *, then its rule and the any-organization rule are removed apart", async () => {
    // "*" names "any" in a discount stream's id, so both scopes' changes share one stream.
    expect(
      (await api.admin("PUT", "/discounts", { model: null, organizationId: null, rate: "0.1" })).status,
    ).toBe(200);
    await expectError(await api.admin("DELETE", "/discounts?organizationId=*"), 404, 120);
    expect(
      (await api.admin("PUT", "/discounts", { model: null, organizationId: "*", rate: "0.3" })).status,
    ).toBe(200);
    expect((await api.admin("DELETE", "/discounts?organizationId=*")).status).toBe(200);
    expect((await json(await api.admin("GET", "/discounts"))).data).toMatchObject([
      { model: null, organizationId: null, rate: "0.1" },
    ]);
    expect((await api.admin("DELETE", "/discounts")).status).toBe(200);
    expect((await json(await api.admin("GET", "/discounts"))).data).toEqual([]);
  });

  it("given a rule of a model the catalog no longer lists, then it can still be removed", async () => {
    await api.ledger.append({
      streamId: "discount-retired-model:acme",
      expectedVersion: "no-stream",
      events: [
        {
          eventId: crypto.randomUUID(),
          event: {
            type: "DiscountSet",
            data: { model: "retired-model", organizationId: "acme", rate: "0.2" },
            metadata: { actor: "admin", occurredAt: "2026-11-20T00:30:00.000Z" },
          },
        },
      ],
    });
    const removed = await api.admin("DELETE", "/discounts?model=retired-model&organizationId=acme");
    expect(removed.status).toBe(200);
  });

  it("writes a rule with a rate as DiscountSet v1, which an earlier release reads, and a removal as v2", async () => {
    await api.admin("PUT", "/discounts", { model: null, organizationId: "acme", rate: "0.1" });
    await api.admin("DELETE", "/discounts?organizationId=acme");
    const stored = await api.ledger.ledger.pool.query<{ rate: string | null; schema_version: number }>(
      `SELECT data->>'rate' AS rate, schema_version FROM ledger_events
       WHERE stream_id = 'discount-*:acme' ORDER BY stream_version`,
    );
    expect(stored.rows).toEqual([
      { rate: "0.1", schema_version: 1 },
      { rate: null, schema_version: 2 },
    ]);
  });
});

describe("FX rates", () => {
  it("records manual rates and lists the history newest first", async () => {
    // When
    const created = await api.admin("POST", "/fx-rates", {
      appliesOn: "2026-11-19",
      rate: "1470.50",
      rateDate: "2026-11-18",
    });
    api.now.value = new Date("2026-11-20T01:00:01.000Z");
    await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1483.40" });

    // Then
    expect(created.status).toBe(201);
    expect(await json(created)).toMatchObject({
      appliesOn: "2026-11-19",
      rateDate: "2026-11-18",
      rate: "1470.5",
      source: "admin",
    });
    const history = await json(await api.admin("GET", "/fx-rates"));
    // This gateway has the bank's key, so a console may offer "refresh from the bank now".
    expect(history.bankSourceConfigured).toBe(true);
    expect(history.data).toEqual([
      {
        appliesOn: "2026-11-20",
        rateDate: "2026-11-20",
        rate: "1483.4",
        source: "admin",
        recordedAt: "2026-11-20T01:00:01.000Z",
      },
      {
        appliesOn: "2026-11-19",
        rateDate: "2026-11-18",
        rate: "1470.5",
        source: "admin",
        recordedAt: "2026-11-20T01:00:00.000Z",
      },
    ]);
  });

  it("given five rates for one day set in one millisecond, then the last one set is in force, for the history and for charges", async () => {
    // Given: five corrections of 20 November's rate, all recorded at api.now
    for (const rate of ["1001", "1002", "1003", "1004", "1005"]) {
      expect((await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate })).status).toBe(201);
    }
    await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "1", outputUsdPer1M: "1" });

    // When: a request started after them is charged
    await api.ledger.append(
      usageRecorded({
        requestId: "req_rate_same_millisecond",
        account: alice,
        tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
        startedAt: "2026-11-20T02:00:00.000Z",
      }),
    );
    await charge("req_rate_same_millisecond");

    // Then: the history lists the last one first, and the charge takes it
    const history = (await json(await api.admin("GET", "/fx-rates"))).data as Record<string, unknown>[];
    expect(history.map((record) => record.rate)).toEqual(["1005", "1004", "1003", "1002", "1001"]);
    const [charged] = (await api.ledger.store.readStream("usage-req_rate_same_millisecond")).filter(
      (event) => event.type === "UsageCharged",
    ) as RecordedEventOf<"UsageCharged">[];
    // 1M input tokens at 1 USD per 1M, at ₩1005 per USD
    expect(charged?.data.amountWon).toBe("1005.000000");
  });

  it("given a day's rate recorded by a clock 2 s ahead, when an admin corrects it by a clock behind it, then the correction is in force, for the history and for charges", async () => {
    // Given
    api.now.value = new Date("2026-11-20T01:00:02.000Z");
    await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1001" });
    await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "1", outputUsdPer1M: "1" });

    // When
    api.now.value = new Date("2026-11-20T01:00:00.000Z");
    const corrected = await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1002" });

    // Then
    expect(await json(corrected)).toMatchObject({ rate: "1002", recordedAt: "2026-11-20T01:00:02.000Z" });
    const history = (await json(await api.admin("GET", "/fx-rates"))).data as Record<string, unknown>[];
    expect(history.map((record) => record.rate)).toEqual(["1002", "1001"]);
    await api.ledger.append(
      usageRecorded({
        requestId: "req_rate_after_clock_behind",
        account: alice,
        tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
        startedAt: "2026-11-20T02:00:00.000Z",
      }),
    );
    await charge("req_rate_after_clock_behind");
    const [charged] = (await api.ledger.store.readStream("usage-req_rate_after_clock_behind")).filter(
      (event) => event.type === "UsageCharged",
    ) as RecordedEventOf<"UsageCharged">[];
    expect(charged?.data.amountWon).toBe("1002.000000");
  });

  it("refuses bad dates, a rate date after the day it applies on, and numbers with 400/100", async () => {
    await expectError(
      await api.admin("POST", "/fx-rates", { appliesOn: "2026-02-30", rate: "1400" }),
      400,
      100,
    );
    await expectError(
      await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-19", rate: "1400", rateDate: "2026-11-20" }),
      400,
      100,
    );
    await expectError(
      await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-19", rate: 1400 }),
      400,
      100,
    );
    await expectError(await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-19", rate: "0" }), 400, 100);
  });

  it("refreshes from the bank now: 201 with the rate, then 200 when today's rate is already recorded", async () => {
    // Given: 2026-11-20 10:00 KST; the bank published 2026-11-19
    bank.script("20261119", { kind: "business-day", usdDealBaseRate: "1,483.40" });

    // When
    const first = await api.admin("POST", "/fx-rates/refresh");
    const second = await api.admin("POST", "/fx-rates/refresh");

    // Then
    expect(first.status).toBe(201);
    expect(await json(first)).toEqual({
      appliesOn: "2026-11-20",
      rateDate: "2026-11-19",
      rate: "1483.4",
      source: "koreaexim",
    });
    expect(second.status).toBe(200);
    expect(await api.ledger.store.readStream("fx-rate-2026-11-20")).toHaveLength(1);
  });

  it("answers 503/300 and records nothing when the bank refuses", async () => {
    bank.script("20261119", { kind: "refusal", resultCode: 3 });
    const message = await expectError(await api.admin("POST", "/fx-rates/refresh"), 503, 300);
    expect(message).toContain("result 3");
    expect(message).not.toContain(authkey);
    expect(await api.ledger.store.readStream("fx-rate-2026-11-20")).toEqual([]);
  });
});

describe("GET /admin/billing", () => {
  async function givenTwoCharges(accountId: string): Promise<void> {
    await givenPricing();
    await api.ledger.append(
      usageRecorded({
        requestId: "req_first",
        account: { kind: "organization", id: accountId },
        tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
        startedAt: "2026-11-20T02:00:00.000Z",
      }),
      usageRecorded({
        requestId: "req_second",
        account: { kind: "organization", id: accountId },
        tokens: { input: 0, cached: 0, output: 250_000, reasoning: 0 },
        startedAt: "2026-11-21T02:00:00.000Z",
      }),
    );
    await charge("req_first");
    await charge("req_second");
  }

  async function billingOf(query: string, rows: number): Promise<Response> {
    let response = await api.admin("GET", `/billing?${query}`);
    for (let attempt = 0; attempt < 200; attempt += 1) {
      if (response.status !== 200) return response;
      const text = await response.clone().text();
      const count = text.includes('"data"')
        ? (JSON.parse(text).data as unknown[]).length
        : text.split("\r\n").length - 2;
      if (count >= rows) return response;
      await new Promise((resolve) => setTimeout(resolve, 25));
      response = await api.admin("GET", `/billing?${query}`);
    }
    return response;
  }

  it("lists each charge with its whole breakdown as JSON, within from (inclusive) and to (exclusive)", async () => {
    // Given
    await givenTwoCharges("acme");

    // When
    const all = await json(await billingOf("account=organization:acme", 2));
    const firstDay = await json(
      await billingOf("account=organization:acme&from=2026-11-20&to=2026-11-21", 1),
    );

    // Then
    expect((all.data as unknown[]).length).toBe(2);
    expect(firstDay.data).toEqual([
      {
        requestId: "req_first",
        account: acme,
        keyId: expect.any(String),
        // The fixtures charge a key the ledger never issued: no name to show.
        keyName: null,
        model: "alpha-5.4",
        endpoint: "chat.completions",
        startedAt: "2026-11-20T02:00:00.000Z",
        chargedAt: "2026-11-20T02:00:05.000Z",
        amountWon: "2000",
        breakdown: {
          tokens: { input: 1_000_000, cached: null, output: 0, reasoning: null },
          inputUsdPerMillionTokens: "2",
          cachedInputUsdPerMillionTokens: "1",
          outputUsdPerMillionTokens: "4",
          usd: "2",
          fxRateKrwPerUsd: "1000",
          fxRateDate: "2026-11-20",
          discountRate: "0",
          amountWon: "2000",
          usageSource: "upstream",
        },
      },
    ]);
  });

  it("exports CSV with a header row, CRLF lines, RFC 4180 quoting and empty cells for counts not reported", async () => {
    // Given: an organization id with a comma and quotes
    const awkwardId = 'acme, "west"';
    await givenTwoCharges(awkwardId);

    // When
    const response = await billingOf(
      `account=${encodeURIComponent(`organization:${awkwardId}`)}&format=csv`,
      2,
    );
    const text = await response.text();

    // Then
    expect(response.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = text.split("\r\n");
    expect(lines[0]).toBe(
      "request_id,account_kind,account_id,key_id,key_name,model,endpoint,started_at,charged_at,input_tokens,cached_input_tokens," +
        "output_tokens,reasoning_tokens,input_usd_per_million_tokens,cached_input_usd_per_million_tokens," +
        "output_usd_per_million_tokens,usd,fx_rate_krw_per_usd,fx_rate_date,discount_rate,amount_won,usage_source",
    );
    expect(lines[1]).toMatch(
      /^req_first,organization,"acme, ""west""",[0-9a-f-]{36},,alpha-5\.4,chat\.completions,2026-11-20T02:00:00\.000Z,2026-11-20T02:00:05\.000Z,1000000,,0,,2,1,4,2,1000,2026-11-20,0,2000,upstream$/,
    );
    expect(lines[2]).toMatch(/^req_second,.*,0,0,250000,0,.*,1000,2026-11-20,0,1000,upstream$/);
    expect(lines[3]).toBe("");
    expect(lines).toHaveLength(4);
  });

  it("refuses a malformed account, range or format with 400/100", async () => {
    await expectError(await api.admin("GET", "/billing?account=acme"), 400, 100);
    await expectError(await api.admin("GET", "/billing?account=user:a&from=yesterday"), 400, 100);
    await expectError(
      await api.admin("GET", "/billing?account=user:a&from=2026-11-21&to=2026-11-20"),
      400,
      100,
    );
    await expectError(await api.admin("GET", "/billing?account=user:a&format=xml"), 400, 100);
  });
});

describe("GET /admin/events", () => {
  it("pages through the raw ledger in log order by default (C6), after a position, and filters one stream", async () => {
    // Given: four events
    await api.admin("POST", "/accounts/user/alice/credits", { amountWon: "1" });
    await api.admin("POST", "/accounts/user/bob/credits", { amountWon: "2" });
    await api.admin("POST", "/accounts/user/alice/credits", { amountWon: "3" });
    await api.admin("POST", "/accounts/user/bob/credits", { amountWon: "4" });

    // When
    const first = await json(await api.admin("GET", "/events?limit=3"));
    const fromTheStart = await json(await api.admin("GET", "/events?limit=3&after=0"));
    const second = await json(await api.admin("GET", `/events?limit=3&after=${first.next}`));
    const third = await json(await api.admin("GET", `/events?limit=3&after=${second.next}`));
    const alicesOnly = await json(await api.admin("GET", "/events?stream=account-user-alice&order=asc"));

    // Then
    const amounts = (page: Record<string, unknown>) =>
      (page.data as { data: { amountWon: string } }[]).map((event) => event.data.amountWon);
    expect(first.order).toBe("asc");
    expect(amounts(first)).toEqual(["1", "2", "3"]);
    expect(fromTheStart).toEqual(first);
    expect(amounts(second)).toEqual(["4"]);
    expect(third).toEqual({ order: "asc", data: [], next: null });
    expect(amounts(alicesOnly)).toEqual(["1", "3"]);
    expect((first.data as Record<string, unknown>[])[0]).toMatchObject({
      streamId: "account-user-alice",
      streamVersion: 0,
      type: "CreditToppedUp",
      metadata: { actor: "admin" },
      position: expect.stringMatching(/^\d+-\d+$/),
    });
  });

  it("lists newest first with order=desc, pages older with before, and filters by type on the server", async () => {
    // Given: three top-ups among other events (the seeded prices and FX rate, a discount)
    await api.admin("POST", "/accounts/user/carol/credits", { amountWon: "5" });
    await api.admin("PUT", "/discounts", { model: null, organizationId: "acme", rate: "0.1" });
    await api.admin("POST", "/accounts/user/carol/credits", { amountWon: "6" });
    await api.admin("POST", "/accounts/user/dave/credits", { amountWon: "7" });

    // When
    const newest = await json(await api.admin("GET", "/events?limit=2&order=desc"));
    const older = await json(await api.admin("GET", `/events?limit=2&before=${newest.next}`));
    const topUps = await json(await api.admin("GET", "/events?type=CreditToppedUp&limit=3&order=desc"));
    const topUpsOrDiscounts = await json(
      await api.admin("GET", "/events?type=CreditToppedUp,DiscountSet&limit=100"),
    );

    // Then
    const types = (page: Record<string, unknown>) =>
      (page.data as { type: string }[]).map((event) => event.type);
    const amounts = (page: Record<string, unknown>) =>
      (page.data as { data: { amountWon: string } }[]).map((event) => event.data.amountWon);
    expect(newest.order).toBe("desc");
    expect(amounts(newest)).toEqual(["7", "6"]);
    expect(types(older)).toEqual(["DiscountSet", "CreditToppedUp"]);
    expect(amounts(topUps)).toEqual(["7", "6", "5"]);
    // The three top-ups fill the page: no older page, so no position to ask for one.
    expect(topUps.next).toBeNull();
    expect(newest.next).toEqual(expect.stringMatching(/^\d+-\d+$/));
    expect(new Set(types(topUpsOrDiscounts))).toEqual(new Set(["CreditToppedUp", "DiscountSet"]));
    for (const event of topUps.data as { eventId: string }[])
      expect(event.eventId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("refuses a malformed position, an unknown type or an unbounded limit with 400/100", async () => {
    await expectError(await api.admin("GET", "/events?type=CreditTopUp"), 400, 100);
    await expectError(await api.admin("GET", "/events?before=abc"), 400, 100);
    await expectError(await api.admin("GET", "/events?order=sideways"), 400, 100);
    await expectError(await api.admin("GET", "/events?after=abc"), 400, 100);
    // Positions no store hands out, beyond PostgreSQL's bigint or below the log's start.
    await expectError(await api.admin("GET", "/events?after=99999999999999999999-0"), 400, 100);
    await expectError(await api.admin("GET", "/events?before=9223372036854775808-0"), 400, 100);
    await expectError(await api.admin("GET", "/events?after=1-9223372036854775808"), 400, 100);
    await expectError(await api.admin("GET", "/events?after=-2-0"), 400, 100);
    await expectError(await api.admin("GET", "/events?limit=100000"), 400, 100);
    await expectError(await api.admin("GET", "/events?limit=0"), 400, 100);
  });
});

describe("GET /admin/billing over the row limit", () => {
  it("refuses the export with 400/100 before sending anything, rather than cutting it short", async () => {
    // Given: a limit of one row, and two charges
    const limited = await startBillingApi(`admin_api_limit_${sequence++}`, { billingHistoryRowsMax: 1 });
    try {
      await limited.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "1", outputUsdPer1M: "1" });
      await limited.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" });
      await limited.ledger.append(
        usageRecorded({ requestId: "req_1", account: acme, startedAt: "2026-11-20T02:00:00.000Z" }),
        usageRecorded({ requestId: "req_2", account: acme, startedAt: "2026-11-20T02:00:01.000Z" }),
      );
      await chargeRecordedUsage(limited, "req_1");
      await chargeRecordedUsage(limited, "req_2");
      let response = await limited.admin("GET", "/billing?account=organization:acme&format=csv");
      for (let attempt = 0; attempt < 200 && response.status === 200; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        response = await limited.admin("GET", "/billing?account=organization:acme&format=csv");
      }

      // Then
      const message = await expectError(response, 400, 100);
      expect(message).toContain("narrow");
      const oneDay = await limited.admin(
        "GET",
        "/billing?account=organization:acme&to=2026-11-20T02:00:00.500Z",
      );
      expect(oneDay.status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
