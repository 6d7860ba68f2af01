import Decimal from "decimal.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingHistoryTable } from "../../../projections/billing-history";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * The read side for admins and consoles: billing a page at a time (over 10,000 charges) and its totals,
 * prices and discounts in force, accounts and their keys.
 */

const rowCount = 10_000;
const keyIds = ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"];
const models = ["alpha-5.4", "beta-3-flash", "delta-4.6-sonnet"];
// 2026-11-20T00:00:00+09:00: the charges start at Seoul midnight and span five Seoul days.
const firstStartMs = Date.parse("2026-11-19T15:00:00.000Z");

interface Charge {
  requestId: string;
  model: string;
  keyId: string;
  startedAt: string;
  amountWon: string;
}

/** Deterministic charges; pairs share a start instant so the request id must break the tie. */
const charges: Charge[] = Array.from({ length: rowCount }, (_unused, index) => ({
  requestId: `req_page_${String(index).padStart(5, "0")}`,
  model: models[index % models.length]!,
  keyId: keyIds[index % keyIds.length]!,
  startedAt: new Date(firstStartMs + Math.floor(index / 2) * 86_400_000 * (5 / rowCount) * 2).toISOString(),
  amountWon: `${(index * 7919) % 1000}.${String((index * 104729) % 1_000_000).padStart(6, "0")}`,
}));

let harness: GatewayHarness;
const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${harness.url}/admin${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "read_api",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  // Given 10,000 charges of user "pager" in the billing read model (as the projection writes them).
  const client = new pg.Client({ connectionString: harness.database.url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO ${billingHistoryTable.name}
         (request_id, account_kind, account_id, key_id, model, endpoint, started_at, charged_at, amount_won, breakdown)
       SELECT c->>'requestId', 'user', 'pager', c->>'keyId', c->>'model', 'chat.completions',
              (c->>'startedAt')::timestamptz, (c->>'startedAt')::timestamptz, (c->>'amountWon')::numeric,
              json_build_object('amountWon', c->>'amountWon')
       FROM json_array_elements($1::json) AS c`,
      [JSON.stringify(charges)],
    );
  } finally {
    await client.end();
  }
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

interface Page {
  data: { requestId: string; amountWon: string }[];
  nextCursor: string | null;
}

async function allPages(
  fetchPage: (cursor: string | null) => Promise<Response>,
): Promise<{ pages: number; ids: string[] }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 1; pages <= 100; pages += 1) {
    const response = await fetchPage(cursor);
    expect(response.status).toBe(200);
    const page = (await response.json()) as Page;
    ids.push(...page.data.map((row) => row.requestId));
    if (page.nextCursor === null) return { pages, ids };
    cursor = page.nextCursor;
  }
  throw new Error("more than 100 pages");
}

const expectedOrder = [...charges]
  .sort((left, right) =>
    left.startedAt === right.startedAt
      ? left.requestId.localeCompare(right.requestId)
      : left.startedAt.localeCompare(right.startedAt),
  )
  .map((charge) => charge.requestId);

describe("billing paging", () => {
  it("walks 10,000 admin charges in pages of 1,000, each once, in the export's order", async () => {
    const { pages, ids } = await allPages((cursor) =>
      admin(`/billing?account=user:pager&limit=1000${cursor ? `&cursor=${cursor}` : ""}`),
    );
    expect(pages).toBe(10);
    expect(ids).toEqual(expectedOrder);
    // Without paging parameters the answer is the whole range, as before.
    const whole = (await (await admin("/billing?account=user:pager")).json()) as Page;
    expect(whole.data.map((row) => row.requestId)).toEqual(expectedOrder);
    expect(whole.nextCursor).toBeUndefined();
  });

  it("pages the session's own billing, within a range", async () => {
    const session = await harness.session("pager");
    const from = "2026-11-21";
    const to = "2026-11-23";
    const { ids } = await allPages((cursor) =>
      fetch(
        `${harness.url}/llm/billing?from=${from}&to=${to}&limit=777${cursor ? `&cursor=${cursor}` : ""}`,
        {
          headers: { authorization: `Bearer ${session}` },
        },
      ),
    );
    const inRange = expectedOrder.filter((requestId) => {
      const startedAt = charges.find((charge) => charge.requestId === requestId)!.startedAt;
      return startedAt >= "2026-11-20T15:00:00.000Z" && startedAt < "2026-11-22T15:00:00.000Z";
    });
    expect(inRange.length).toBeGreaterThan(1_000);
    expect(ids).toEqual(inRange);
  });

  it("pages newest first with order=newest, each charge once, the export's order reversed", async () => {
    const session = await harness.session("pager");
    const { pages, ids } = await allPages((cursor) =>
      fetch(`${harness.url}/llm/billing?order=newest&limit=1000${cursor ? `&cursor=${cursor}` : ""}`, {
        headers: { authorization: `Bearer ${session}` },
      }),
    );
    expect(pages).toBe(10);
    expect(ids).toEqual([...expectedOrder].reverse());
    const first = (await (await admin("/billing?account=user:pager&order=newest")).json()) as Page;
    expect(first.data.map((row) => row.requestId)).toEqual(expectedOrder.slice(-100).reverse());
    expect(first.nextCursor).not.toBeNull();
  });

  it("given a newest-first page's cursor passed back alone, then the next older page follows, each charge once", async () => {
    const { pages, ids } = await allPages((cursor) =>
      admin(`/billing?account=user:pager&limit=1000${cursor ? `&cursor=${cursor}` : "&order=newest"}`),
    );
    expect(pages).toBe(10);
    expect(ids).toEqual([...expectedOrder].reverse());
  });

  it("given a cursor with the other order, then 400/100 saying which order gave it, never the pages already read", async () => {
    const first = (await (await admin("/billing?account=user:pager&limit=10&order=newest")).json()) as Page;
    const response = await admin(
      `/billing?account=user:pager&limit=10&order=oldest&cursor=${first.nextCursor}`,
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      status: 100,
      message: expect.stringContaining("order=newest"),
    });
  });

  it("given a cursor of another account's pages, then 400/100, never a page of this account's charges read from it", async () => {
    const first = (await (await admin("/billing?account=user:pager&limit=10")).json()) as Page;
    for (const response of [
      await admin(`/billing?account=user:other&limit=10&cursor=${first.nextCursor}`),
      await fetch(`${harness.url}/llm/billing?limit=10&cursor=${first.nextCursor}`, {
        headers: { authorization: `Bearer ${await harness.session("other")}` },
      }),
    ]) {
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        status: 100,
        message: expect.stringContaining("cursor"),
      });
    }
  });

  it("refuses a cursor it did not give and a page size out of bounds with 400/100", async () => {
    for (const query of ["cursor=bm90LWEtY3Vyc29y", "limit=0", "limit=1001", "limit=ten", "order=random"]) {
      const response = await admin(`/billing?account=user:pager&${query}`);
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { status: number }).status).toBe(100);
    }
  });
});

describe("billing totals", () => {
  const sumsBy = (groupOf: (charge: Charge) => string) => {
    const sums = new Map<string, { charges: number; amountWon: Decimal }>();
    for (const charge of charges) {
      const group = groupOf(charge);
      const sum = sums.get(group) ?? { charges: 0, amountWon: new Decimal(0) };
      sums.set(group, { charges: sum.charges + 1, amountWon: sum.amountWon.plus(charge.amountWon) });
    }
    return [...sums]
      .sort(([left], [right]) => left.localeCompare(right))
      .map(([group, sum]) => ({ group, charges: sum.charges, amountWon: sum.amountWon.toFixed() }));
  };
  const seoulDateOf = (instant: string) =>
    new Date(Date.parse(instant) + 9 * 3_600_000).toISOString().slice(0, 10);

  it.each([
    ["day", (charge: Charge) => seoulDateOf(charge.startedAt)],
    ["model", (charge: Charge) => charge.model],
    ["key", (charge: Charge) => charge.keyId],
  ] as const)("sums the charges exactly by %s", async (groupBy, groupOf) => {
    const response = await admin(`/billing/totals?account=user:pager&groupBy=${groupBy}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      totals: { group: string; charges: number; amountWon: string }[];
      charges: number;
      amountWon: string;
    };
    expect(body.totals).toEqual(sumsBy(groupOf));
    expect(body.charges).toBe(rowCount);
    expect(body.amountWon).toBe(
      charges.reduce((sum, charge) => sum.plus(charge.amountWon), new Decimal(0)).toFixed(),
    );
  });

  it("gives the session its own totals and refuses an unknown grouping", async () => {
    const session = await harness.session("pager");
    const headers = { authorization: `Bearer ${session}` };
    const byDay = await fetch(`${harness.url}/llm/billing/totals?groupBy=day`, { headers });
    expect(((await byDay.json()) as { charges: number }).charges).toBe(rowCount);
    const other = await harness.session("somebody-else");
    const none = await fetch(`${harness.url}/llm/billing/totals?groupBy=day`, {
      headers: { authorization: `Bearer ${other}` },
    });
    expect(await none.json()).toMatchObject({ totals: [], charges: 0, amountWon: "0" });
    const refused = await fetch(`${harness.url}/llm/billing/totals?groupBy=hour`, { headers });
    expect(refused.status).toBe(400);
  });
});

describe("prices, discounts, accounts and keys", () => {
  it("lists every model with the price in force", async () => {
    const before = (await (await admin("/prices")).json()) as {
      data: { model: string; inputUsdPer1M: string; effectiveAt: string | null }[];
    };
    expect(before.data).toHaveLength(23);
    expect(before.data.every((price) => price.effectiveAt !== null)).toBe(true);
    expect(
      (
        await admin("/models/gamma-4-5/price", {
          method: "PUT",
          body: { inputUsdPer1M: "0.33", outputUsdPer1M: "0.66" },
        })
      ).status,
    ).toBe(200);
    const after = (await (await admin("/prices")).json()) as typeof before;
    expect(after.data.find((price) => price.model === "gamma-4-5")).toMatchObject({
      inputUsdPer1M: "0.33",
      outputUsdPer1M: "0.66",
      cachedInputUsdPer1M: "0.33",
    });
  });

  it("lists the discount rules in force, the latest per scope", async () => {
    for (const rate of ["0.1", "0.15"])
      await admin("/discounts", {
        method: "PUT",
        body: { model: "alpha-5.4", organizationId: "acme", rate },
      });
    await admin("/discounts", { method: "PUT", body: { model: null, organizationId: null, rate: "0.01" } });
    const body = (await (await admin("/discounts")).json()) as { data: unknown[] };
    expect(body.data).toEqual([
      { model: null, organizationId: null, rate: "0.01", effectiveAt: expect.any(String) },
      { model: "alpha-5.4", organizationId: "acme", rate: "0.15", effectiveAt: expect.any(String) },
    ]);
  });

  it("finds accounts by id, a page at a time, and lists an account's keys", async () => {
    for (const id of ["finder-a", "finder-b", "finder-c"]) await harness.topUp({ kind: "user", id }, "12.5");
    const session = await harness.session("finder-b");
    const issued = await harness.issueKey(session, { name: "console key" });
    const found: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 3; pages += 1) {
      const page = (await (
        await admin(`/accounts?search=FINDER&limit=2${cursor ? `&cursor=${cursor}` : ""}`)
      ).json()) as { data: { id: string }[]; nextCursor: string | null };
      found.push(...page.data.map((account) => account.id));
      cursor = page.nextCursor;
      if (cursor === null) break;
    }
    expect(found).toEqual(["finder-a", "finder-b", "finder-c"]);
    expect(cursor).toBeNull();
    // An empty search is no search, as a form's empty field sends it (docs/api.md's own example).
    const unsearched = (await admin("/accounts?search=&kind=user&limit=5")) as Response;
    expect(unsearched.status).toBe(200);
    expect(((await unsearched.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0);
    const page = (await (await admin("/accounts?search=finder-b")).json()) as { data: unknown[] };
    expect(page.data).toEqual([
      {
        kind: "user",
        id: "finder-b",
        balanceWon: "12.5",
        toppedUpWon: "12.5",
        chargedWon: "0",
        pendingCharges: 0,
        heldWon: "0",
        pendingWon: "0",
      },
    ]);
    const keys = (await (await admin("/accounts/user/finder-b/keys")).json()) as { data: unknown[] };
    expect(keys.data).toEqual([
      {
        uuid: issued.uuid,
        name: "console key",
        description: "",
        status: 1,
        keyPreview: `svc_${issued.key.slice(4, 8)}…${issued.key.slice(-4)}`,
        createdAt: expect.any(String),
        limits: {
          monthlySpendLimitWon: null,
          totalSpendLimitWon: null,
          rateLimitRequestsPerMinute: null,
          allowedModels: null,
        },
        spend: { month: expect.stringMatching(/^\d{4}-\d{2}$/), monthWon: "0", totalWon: "0" },
      },
    ]);
    expect((await admin("/accounts?cursor=garbage")).status).toBe(400);
  });

  it("given more keys than a page, then lists them all, a page at a time, newest first, each once", async () => {
    // Given: 1,001 keys of one account, pairs issued in one microsecond so the id must break the tie
    const keyCount = 1_001;
    const keyIdOf = (index: number) => `00000000-0000-4000-8000-${String(index).padStart(12, "0")}`;
    const createdAtOf = (index: number) =>
      new Date(Date.parse("2026-11-01T00:00:00.000Z") + Math.floor(index / 2)).toISOString();
    const client = new pg.Client({ connectionString: harness.database.url });
    await client.connect();
    try {
      await client.query(
        `INSERT INTO projection_key_lists (key_id, owner_kind, owner_id, name, description, status, key_preview, created_at)
         SELECT k->>'keyId', 'user', 'many-keys', k->>'keyId', '', 1, 'svc_abcd…wxyz', (k->>'createdAt')::timestamptz
         FROM json_array_elements($1::json) AS k`,
        [
          JSON.stringify(
            Array.from({ length: keyCount }, (_unused, index) => ({
              keyId: keyIdOf(index),
              createdAt: createdAtOf(index),
            })),
          ),
        ],
      );
    } finally {
      await client.end();
    }
    const newestFirst = Array.from({ length: keyCount }, (_unused, index) => index)
      .sort((left, right) =>
        createdAtOf(left) === createdAtOf(right)
          ? keyIdOf(left).localeCompare(keyIdOf(right))
          : createdAtOf(right).localeCompare(createdAtOf(left)),
      )
      .map(keyIdOf);

    // When
    const whole = (await (await admin("/accounts/user/many-keys/keys")).json()) as {
      data: { uuid: string }[];
      nextCursor: string | null;
    };
    const listed = [...whole.data.map((key) => key.uuid)];
    let cursor = whole.nextCursor ?? null;
    for (let pages = 0; cursor !== null && pages < 10; pages += 1) {
      const page = (await (
        await admin(`/accounts/user/many-keys/keys?limit=333&cursor=${cursor}`)
      ).json()) as {
        data: { uuid: string }[];
        nextCursor: string | null;
      };
      listed.push(...page.data.map((key) => key.uuid));
      cursor = page.nextCursor ?? null;
    }

    // Then
    expect(listed).toEqual(newestFirst);
    const billingCursor = Buffer.from(JSON.stringify(["2026-11-01T00:00:00.000000Z", "req_1"])).toString(
      "base64url",
    );
    expect((await admin(`/accounts/user/many-keys/keys?cursor=${billingCursor}`)).status).toBe(400);
    expect((await admin(`/accounts/user/finder-b/keys?cursor=${whole.nextCursor}`)).status).toBe(400);
    expect((await admin("/accounts/user/many-keys/keys?limit=1001")).status).toBe(400);
  });
});
