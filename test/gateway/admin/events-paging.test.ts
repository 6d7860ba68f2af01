import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { topUp } from "../../support/ledger-fixtures";
import { type BillingApiHarness, startBillingApi } from "./billing-api-harness";

/**
 * `GET /admin/events` paged while the log grows: in log order a type-filtered page never passes an event a
 * transaction still in flight will commit below it, and newest first the last page says it is the last.
 */

let api: BillingApiHarness;
let sequence = 0;

beforeEach(async () => {
  api = await startBillingApi(`admin_events_paging_${sequence++}`);
});

afterEach(async () => {
  await api.close();
});

interface EventsPage {
  data: { type: string; data: { reference?: string } }[];
  next: string | null;
}

async function events(query: string): Promise<EventsPage> {
  const response = await api.admin("GET", `/events?${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as EventsPage;
}

/** A store whose appends run on one connection, inside whatever transaction the test holds open on it. */
async function storeOnOneConnection(client: pg.Client): Promise<PostgresEventStore> {
  const onTheClient = {
    query: client.query.bind(client),
    connect: async () => ({ query: client.query.bind(client), release: () => {} }),
  };
  return PostgresEventStore.open({
    pool: onTheClient as unknown as pg.Pool,
    listenConnectionString: api.ledger.database.url,
    pollIntervalMs: 1_000,
  });
}

describe("GET /admin/events in log order with a type filter", () => {
  it("given a top-up committed late by a transaction that began first, then following with next lists it too", async () => {
    // Given: a writer whose transaction takes its place in the log first and commits last
    const late = new pg.Client({ connectionString: api.ledger.database.url });
    await late.connect();
    try {
      const lateStore = await storeOnOneConnection(late);
      await late.query("BEGIN");
      await late.query("SELECT pg_current_xact_id()");
      await lateStore.append({
        streamId: "account-user-late",
        expectedVersion: "any",
        events: [topUp("late", "1", "committed-late")],
      });
      await api.ledger.append({
        streamId: "account-user-early",
        expectedVersion: "any",
        events: [topUp("early", "2", "committed-first")],
      });

      // When: a follower reads a page while the first transaction is still open, then it commits
      const first = await events("type=CreditToppedUp&after=0&limit=100");
      await late.query("COMMIT");
      const seen = first.data.map((event) => event.data.reference);
      let after = first.next ?? "0";
      for (let attempt = 0; attempt < 500 && !seen.includes("committed-first"); attempt++) {
        const page = await events(`type=CreditToppedUp&after=${after}&limit=100`);
        seen.push(...page.data.map((event) => event.data.reference));
        if (page.next !== null) after = page.next;
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }

      // Then: both, in log order, each once
      expect(seen).toEqual(["committed-late", "committed-first"]);
    } finally {
      await late.end();
    }
  });
});

describe("GET /admin/events newest first", () => {
  it("given exactly two pages of events, then the second says it is the last: no empty page after it", async () => {
    // Given: four top-ups
    for (const amountWon of ["1", "2", "3", "4"])
      expect((await api.admin("POST", "/accounts/user/pager/credits", { amountWon })).status).toBe(201);

    // When
    const newest = await events("type=CreditToppedUp&order=desc&limit=2");
    const older = await events(`type=CreditToppedUp&limit=2&before=${newest.next}`);

    // Then
    expect(newest.next).not.toBeNull();
    expect(older.data).toHaveLength(2);
    expect(older.next).toBeNull();
  });
});
