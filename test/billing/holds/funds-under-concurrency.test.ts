import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Money } from "../../../src/kernel/money";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";

/**
 * C10 under load: one account, many concurrent requests, two gateway processes placing holds against the
 * same funds. Whatever the interleaving, the account ends no lower than minus one request's cost, every
 * won is accounted for, and small requests within the balance are all served.
 */

interface Funds {
  balance_won: string;
  pending_won: string;
  held_won: string;
}

const dispatcher = new Agent({ connections: 600 });

async function fundsOf(harness: GatewayHarness, account: string): Promise<Funds> {
  const result = await harness.service.ledger.pool.query<Funds>(
    "SELECT balance_won, pending_won, held_won FROM account_funds WHERE account_kind = 'user' AND account_id = $1",
    [account],
  );
  return result.rows[0]!;
}

async function chargesOf(harness: GatewayHarness, account: string): Promise<Money[]> {
  const result = await harness.service.ledger.pool.query<{ amount: string }>(
    `SELECT data->>'amountWon' AS amount FROM ledger_events
     WHERE type = 'UsageCharged' AND data->'account'->>'id' = $1`,
    [account],
  );
  return result.rows.map((row) => new Money(row.amount));
}

function chat(harness: GatewayHarness, key: string): Promise<Response> {
  return fetch(`${harness.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "alpha-5.4", messages: [{ role: "user", content: "Tell me a story" }] }),
    // @ts-expect-error undici's dispatcher option, which the DOM typing of fetch does not know
    dispatcher,
  });
}

/** Waits until every hold is settled and every usage charged: what the account ends with. */
async function settled(harness: GatewayHarness, account: string): Promise<Funds> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const funds = await fundsOf(harness, account);
    if (new Money(funds.held_won).isZero() && new Money(funds.pending_won).isZero()) return funds;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`holds or pending charges left: ${JSON.stringify(await fundsOf(harness, account))}`);
}

describe("funds under concurrency, two gateway processes on one ledger", () => {
  let first: GatewayHarness;
  let second: GatewayHarness;

  beforeAll(async () => {
    // The queue on Redis: the PostgreSQL one would add its own connections to the two gateways' pools.
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the concurrency tests");
    first = await startGatewayHarness({
      label: "holds_concurrency",
      billing: { redisUrl: process.env.REDIS_URL },
    });
    second = await startGatewayHarness({ database: first.database, charges: first.charges });
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it("given ₩5, when 500 requests arrive at once through two gateways, then the account ends above minus one request's cost", async () => {
    // Given
    const key = (await first.issueKey(await first.session("hot"))).key;
    await first.topUp({ kind: "user", id: "hot" }, "5");

    // When
    const responses = await Promise.all(
      Array.from({ length: 500 }, (_, index) => chat(index % 2 === 0 ? first : second, key)),
    );

    // Then: the served ones were paid for, the others refused as a personal key out of credit (C3)
    const statuses = responses.map((response) => response.status);
    const served = statuses.filter((status) => status === 200).length;
    expect(served).toBeGreaterThan(0);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 400)).toBe(true);
    const refusals = await Promise.all(
      responses.filter((response) => response.status === 400).map((response) => response.json()),
    );
    expect(refusals.every((body) => (body as { status: number }).status === 401)).toBe(true);

    const funds = await settled(first, "hot");
    const charges = await chargesOf(first, "hot");
    expect(charges).toHaveLength(served);
    const spent = charges.reduce((sum, charge) => sum.plus(charge), new Money(0));
    const oneRequestMax = charges.reduce((max, charge) => Money.max(max, charge), new Money(0));
    expect(new Money(funds.balance_won).toFixed()).toBe(new Money(5).minus(spent).toFixed());
    expect(new Money(funds.balance_won).greaterThanOrEqualTo(oneRequestMax.negated())).toBe(true);
  }, 120_000);

  it("given ₩1,000, when 50 small requests arrive at once, then every one is served", async () => {
    const key = (await first.issueKey(await first.session("roomy"))).key;
    await first.topUp({ kind: "user", id: "roomy" }, "1000");

    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) => chat(index % 2 === 0 ? first : second, key)),
    );

    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(200));
    const funds = await settled(first, "roomy");
    const spent = (await chargesOf(first, "roomy")).reduce((sum, charge) => sum.plus(charge), new Money(0));
    expect(new Money(funds.balance_won).toFixed()).toBe(new Money(1000).minus(spent).toFixed());
  }, 60_000);
});

describe("funds with no worker charging", () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    // No billing workers: usages are recorded and stay pending, never charged.
    gateway = await startGatewayHarness({ label: "holds_no_worker" });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
  });

  it("given ₩5 and no charges posted, when requests come one after another, then spending stops at the credit", async () => {
    const key = (await gateway.issueKey(await gateway.session("thrifty"))).key;
    await gateway.topUp({ kind: "user", id: "thrifty" }, "5");

    let served = 0;
    let refused: Response | undefined;
    for (let attempt = 0; attempt < 200 && !refused; attempt++) {
      const response = await chat(gateway, key);
      if (response.status === 200) served += 1;
      else refused = response;
    }

    expect(served).toBeGreaterThan(0);
    expect(refused?.status).toBe(400);
    expect(await refused!.json()).toMatchObject({ status: 401 });
    // Every served usage is pending at its exact cost; nothing was charged, and nothing is held any more.
    const funds = await (async () => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const current = await fundsOf(gateway, "thrifty");
        if (new Money(current.held_won).isZero()) return current;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error("holds left");
    })();
    expect(funds.balance_won).toBe("5");
    // Spent within the credit, and refused only once less than ₩1 and one request's cost was left.
    const pending = new Money(funds.pending_won);
    const oneRequest = pending.dividedBy(served);
    expect(pending.lessThanOrEqualTo(5)).toBe(true);
    expect(new Money(5).minus(pending).lessThan(oneRequest.plus(1))).toBe(true);
    // Each charge is enqueued once its usage is logged, which follows the answers in batches.
    await expect.poll(() => gateway.enqueued.length, { timeout: 10_000 }).toBe(served);
    expect(gateway.enqueued).toHaveLength(served);
  }, 120_000);
});
