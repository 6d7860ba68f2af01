import OpenAI from "openai";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { Money } from "../../src/kernel/money";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { callJson } from "../support/json-call";

/**
 * Per-key limits through the real gateway and PostgreSQL: spend limits stop a key once its held + pending +
 * charged reaches them, whatever the concurrency (limit + one request's cost at most, C10's own bound), the
 * rate limit refuses the request over N in a minute, and the account's other keys go on unaffected.
 */

const dispatcher = new Agent({ connections: 200 });

interface Reply {
  status: number;
  body: Record<string, unknown>;
  retryAfter?: string | null;
}

async function call(
  harness: GatewayHarness,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Reply> {
  return callJson(harness.url, method, path, token, body);
}

/** A small request whose hold covers its cost: it names its maximum output. */
async function chat(harness: GatewayHarness, key: string): Promise<Reply> {
  const response = await fetch(`${harness.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "alpha-5.4",
      max_tokens: 50,
      messages: [{ role: "user", content: "Tell me a story" }],
    }),
    // @ts-expect-error undici's dispatcher option, which the DOM typing of fetch does not know
    dispatcher,
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    retryAfter: response.headers.get("retry-after"),
  };
}

/** The key's spend once no hold is left: pending and charged, the exact costs of what it was served. */
async function settledSpendOf(harness: GatewayHarness, keyId: string): Promise<Money> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const result = await harness.service.ledger.pool.query<{ held: string; spent: string }>(
      `SELECT coalesce(sum(held_won), 0)::text AS held,
              coalesce(sum(held_won + pending_won + charged_won), 0)::text AS spent
       FROM key_spend WHERE key_id = $1`,
      [keyId],
    );
    const row = result.rows[0]!;
    if (new Money(row.held).isZero()) return new Money(row.spent);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`holds left on key ${keyId}`);
}

/** The exact costs of the key's recorded usages, once every one is in the log (written in batches). */
async function usageCostsOf(harness: GatewayHarness, keyId: string): Promise<Money[]> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const rows = await harness.service.ledger.pool.query("SELECT 1 FROM request_holds WHERE key_id = $1", [
      keyId,
    ]);
    if (rows.rowCount === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const result = await harness.service.ledger.pool.query<{ cost: string }>(
    "SELECT data->>'pendingWon' AS cost FROM ledger_events WHERE type = 'UsageRecorded' AND data->>'keyId' = $1",
    [keyId],
  );
  return result.rows.map((row) => new Money(row.cost));
}

/** Keeps a test of N requests in one minute from straddling the minute's turn. */
async function awayFromMinuteTurn(secondsNeeded: number): Promise<void> {
  const second = new Date().getUTCSeconds();
  if (second > 60 - secondsNeeded) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1_000));
}

/** Waits until the wall clock's second within the minute is `second` (this minute or the next). */
async function untilSecondOfMinute(second: number): Promise<void> {
  const now = Date.now();
  const minuteStart = now - (now % 60_000);
  let target = minuteStart + second * 1_000;
  if (target < now) target += 60_000;
  await new Promise((resolve) => setTimeout(resolve, target - now));
}

describe("per-key limits at admission", () => {
  let harness: GatewayHarness;
  const admin = testSecrets.adminToken;

  beforeAll(async () => {
    harness = await startGatewayHarness({
      label: "key_limits",
      service: { adminToken: testSecrets.adminToken },
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  it("given a ₩3 monthly limit, when a client calls until refused, then the key stops at its limit with a message naming it, and the account's other key is served", async () => {
    // Given
    const session = await harness.session("mina");
    const limited = await harness.issueKey(session, { name: "limited" });
    const other = await harness.issueKey(session, { name: "other" });
    await harness.topUp({ kind: "user", id: "mina" }, "1000");
    const set = await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      monthlySpendLimitWon: "3",
    });
    expect(set).toMatchObject({
      status: 200,
      body: {
        uuid: limited.uuid,
        limits: { monthlySpendLimitWon: "3", totalSpendLimitWon: null, rateLimitRequestsPerMinute: null },
        spend: { monthWon: "0", totalWon: "0" },
      },
    });

    // When: the official client, one request after another
    const client = harness.openai(limited.key);
    let served = 0;
    let refusal: unknown;
    for (let attempt = 0; attempt < 100 && !refusal; attempt++) {
      try {
        await client.chat.completions.create({
          model: "alpha-5.4",
          max_tokens: 50,
          messages: [{ role: "user", content: "Tell me a story" }],
        });
        served += 1;
      } catch (error) {
        refusal = error;
      }
    }

    // Then
    expect(served).toBeGreaterThan(0);
    expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
    const error = refusal as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ code: 140, type: "spend_limit_error" });
    expect(error.message).toContain("monthly spend limit of ₩3");
    expect(error.message).toMatch(/resets at \d{4}-\d{2}-01 00:00 KST/);
    const spent = await settledSpendOf(harness, limited.uuid);
    const costs = await usageCostsOf(harness, limited.uuid);
    const oneRequestMax = costs.reduce((max, cost) => Money.max(max, cost), new Money(0));
    expect(spent.lessThanOrEqualTo(new Money(3).plus(oneRequestMax))).toBe(true);
    expect((await chat(harness, other.key)).status).toBe(200);

    // The list shows the limit and the month's spend.
    const listed = await call(harness, "GET", "/llm/apis", session);
    const entry = (listed.body.data as { uuid: string; spend: { monthWon: string } }[]).find(
      (item) => item.uuid === limited.uuid,
    );
    expect(entry).toMatchObject({ limits: { monthlySpendLimitWon: "3" } });
    expect(new Money(entry!.spend.monthWon).toFixed()).toBe(spent.toFixed());

    // Cleared, the key is admitted again.
    const cleared = await call(harness, "DELETE", `/llm/apis/${limited.uuid}/limits`, session);
    expect(cleared.body).toMatchObject({ limits: { monthlySpendLimitWon: null } });
    expect((await chat(harness, limited.key)).status).toBe(200);
  }, 120_000);

  it("given a ₩5 total limit on an organization key, when 100 requests arrive at once, then its spend ends no higher than the limit plus one request's cost", async () => {
    const session = await harness.session("joon", "hanbit");
    const limited = await harness.issueKey(session, { isOrganization: true, name: "shared" });
    const other = await harness.issueKey(session, { isOrganization: true, name: "shared too" });
    await harness.topUp({ kind: "organization", id: "hanbit" }, "1000");
    expect(
      (await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, { totalSpendLimitWon: "5" }))
        .status,
    ).toBe(200);

    const replies = await Promise.all(Array.from({ length: 100 }, () => chat(harness, limited.key)));

    const served = replies.filter((reply) => reply.status === 200).length;
    expect(served).toBeGreaterThan(0);
    const refused = replies.filter((reply) => reply.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    for (const reply of refused) {
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({
        status: 140,
        message: expect.stringContaining("total spend limit of ₩5"),
      });
    }
    const spent = await settledSpendOf(harness, limited.uuid);
    const costs = await usageCostsOf(harness, limited.uuid);
    expect(costs).toHaveLength(served);
    const oneRequestMax = costs.reduce((max, cost) => Money.max(max, cost), new Money(0));
    expect(spent.toFixed()).toBe(costs.reduce((sum, cost) => sum.plus(cost), new Money(0)).toFixed());
    expect(spent.lessThanOrEqualTo(new Money(5).plus(oneRequestMax))).toBe(true);
    expect((await chat(harness, other.key)).status).toBe(200);
  }, 120_000);

  it("given a rate limit of 3 per minute, when 4 requests come in one minute, then the fourth is 429/130 with Retry-After naming the limit, and the other key is served", async () => {
    const session = await harness.session("seo");
    const limited = await harness.issueKey(session, { name: "rated" });
    const other = await harness.issueKey(session, { name: "free" });
    await harness.topUp({ kind: "user", id: "seo" }, "1000");
    expect(
      (
        await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
          rateLimitRequestsPerMinute: 3,
        })
      ).status,
    ).toBe(200);
    await awayFromMinuteTurn(15);

    const replies: Reply[] = [];
    for (let index = 0; index < 4; index++) replies.push(await chat(harness, limited.key));

    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 429]);
    expect(replies[3]!.body).toEqual({
      status: 130,
      message: expect.stringMatching(
        /^This API key reached its rate limit of 3 requests per minute; retry after \d+ s$/,
      ),
      error: expect.objectContaining({ code: 130, type: "rate_limit_error" }),
    });
    const retryAfterSeconds = Number(replies[3]!.retryAfter);
    expect(Number.isInteger(retryAfterSeconds)).toBe(true);
    expect(retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(replies[3]!.body.message).toContain(`retry after ${retryAfterSeconds} s`);
    expect((await chat(harness, other.key)).status).toBe(200);
  }, 60_000);

  it("given a rate limit of 2 per minute, when the official client's third call is refused late in a minute, then its own retry waits Retry-After and is served in the next minute", async () => {
    // Given: a key limited to 2 a minute, and a client that counts what reaches the wire
    const session = await harness.session("retry");
    const limited = await harness.issueKey(session, { name: "retried" });
    await harness.topUp({ kind: "user", id: "retry" }, "1000");
    await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      rateLimitRequestsPerMinute: 2,
    });
    const attempts: { status: number; retryAfter: string | null; atMs: number }[] = [];
    const client = new OpenAI({
      apiKey: limited.key,
      baseURL: harness.baseUrl,
      maxRetries: 2,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        attempts.push({
          status: response.status,
          retryAfter: response.headers.get("retry-after"),
          atMs: Date.now(),
        });
        return response;
      },
    });
    const ask = () =>
      client.chat.completions.create({
        model: "alpha-5.4",
        max_tokens: 20,
        messages: [{ role: "user", content: "Hello" }],
      });
    // The three calls start in a minute's last seconds, so the wait asked for is short.
    await untilSecondOfMinute(53);

    // When
    await ask();
    await ask();
    const third = await ask();

    // Then: one 429 whose Retry-After the client waited out, then the retry served
    expect(third.choices[0]?.message.content).toBeTruthy();
    expect(attempts.map((attempt) => attempt.status)).toEqual([200, 200, 429, 200]);
    const refused = attempts[2]!;
    const retried = attempts[3]!;
    const retryAfterSeconds = Number(refused.retryAfter);
    expect(retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(retryAfterSeconds).toBeLessThanOrEqual(8);
    // The retry's answer arrives no sooner than the wait (its own request takes a little longer still).
    expect(retried.atMs - refused.atMs).toBeGreaterThanOrEqual(retryAfterSeconds * 1_000 - 50);
  }, 120_000);

  it("given keys of several owners, then limits follow the API's tenancy and an admin may set any", async () => {
    const alice = await harness.session("alice");
    const bob = await harness.session("bob");
    const carol = await harness.session("carol", "acme");
    const dave = await harness.session("dave", "acme");
    const eve = await harness.session("eve", "globex");
    const personal = await harness.issueKey(alice);
    const shared = await harness.issueKey(carol, { isOrganization: true });

    // Another user, another organization: not found, as for every key route (C3).
    expect((await call(harness, "GET", `/llm/apis/${personal.uuid}/limits`, bob)).status).toBe(404);
    // A user whose id is the organization's is still not the organization.
    const namesake = await harness.session("acme");
    expect((await call(harness, "GET", `/llm/apis/${shared.uuid}/limits`, namesake)).status).toBe(404);
    expect(
      (await call(harness, "PUT", `/llm/apis/${shared.uuid}/limits`, eve, { totalSpendLimitWon: "1" })).body,
    ).toMatchObject({ status: 120 });
    // Of the organization's sessions, its owners and admins set its keys' limits (C14): carol issued its
    // first key, so she owns it; dave, a member, is refused 403/160.
    expect(
      await call(harness, "PUT", `/llm/apis/${shared.uuid}/limits`, dave, { rateLimitRequestsPerMinute: 60 }),
    ).toMatchObject({ status: 403, body: { status: 160 } });
    expect(
      (
        await call(harness, "PUT", `/llm/apis/${shared.uuid}/limits`, carol, {
          rateLimitRequestsPerMinute: 60,
        })
      ).body,
    ).toMatchObject({ limits: { rateLimitRequestsPerMinute: 60 } });
    // An admin sets any key's limits, and the event says so.
    const byAdmin = await call(harness, "PUT", `/admin/keys/${personal.uuid}/limits`, admin, {
      monthlySpendLimitWon: "50000",
      totalSpendLimitWon: "120000.5",
    });
    expect(byAdmin.body).toMatchObject({
      limits: {
        monthlySpendLimitWon: "50000",
        totalSpendLimitWon: "120000.5",
        rateLimitRequestsPerMinute: null,
      },
    });
    expect((await call(harness, "GET", `/llm/apis/${personal.uuid}/limits`, alice)).body).toMatchObject({
      limits: { monthlySpendLimitWon: "50000" },
    });
    const events = await harness.service.ledger.store.readStream(`apikey-${personal.uuid}`);
    expect(events.at(-1)).toMatchObject({ type: "ApiKeyLimitsSet", metadata: { actor: "admin" } });
    expect((await call(harness, "DELETE", `/admin/keys/${personal.uuid}/limits`, admin)).body).toMatchObject({
      limits: { monthlySpendLimitWon: null, totalSpendLimitWon: null },
    });
    expect(
      (await call(harness, "GET", `/admin/keys/00000000-0000-4000-8000-000000000000/limits`, admin)).status,
    ).toBe(404);
    // Without the admin token, the admin route is closed.
    expect((await call(harness, "GET", `/admin/keys/${personal.uuid}/limits`, alice)).status).toBe(401);
  });

  it("given bad limits, then 400/100 naming the field", async () => {
    const session = await harness.session("hana");
    const key = await harness.issueKey(session);
    const cases: [unknown, string][] = [
      [{ monthlySpendLimitWon: 5000 }, "monthlySpendLimitWon"],
      [{ totalSpendLimitWon: "0" }, "totalSpendLimitWon: must be more than 0"],
      [{ monthlySpendLimitWon: "1.005" }, "monthlySpendLimitWon: must have at most 2 decimal places"],
      [{ rateLimitRequestsPerMinute: 0 }, "rateLimitRequestsPerMinute: must be at least 1"],
      [{ rateLimitRequestsPerMinute: 1.5 }, "rateLimitRequestsPerMinute"],
      [{ dailySpendLimitWon: "1" }, "dailySpendLimitWon"],
    ];
    for (const [body, message] of cases) {
      const reply = await call(harness, "PUT", `/llm/apis/${key.uuid}/limits`, session, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body).toMatchObject({ status: 100, message: expect.stringContaining(message) });
    }
  });

  it("given all of the above, then ledger verify finds the live tables equal to a fold of the log", async () => {
    const differences = await verifyProjections({
      pool: harness.service.ledger.pool,
      store: harness.service.ledger.store,
      projections: allProjections,
    });
    expect(differences).toEqual([]);
  });
});
