import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { metadata, topUp } from "../../support/ledger-fixtures";
import { type BillingApiHarness, startBillingApi } from "./billing-api-harness";

/**
 * `GET /admin/events` in log order hands back `next` to pass as `after` later, to follow the log — with a
 * `type` filter too (finance following the top-ups). A transaction that took its place in the log early and
 * commits after later ones must be handed to such a follower, not passed over: the page holds back what
 * an open transaction may still land before, as the unfiltered page (the event store's readAll) does.
 */
describe("following GET /admin/events filtered by type while a transaction commits late", () => {
  let api: BillingApiHarness;

  beforeEach(async () => {
    api = await startBillingApi("events_follow_late");
  });
  afterEach(async () => {
    await api.close();
  });

  /**
   * Follows the top-ups from `after` as a client polling the API does, for `forMs` or until it has `count`
   * (the test server is shared: an unrelated transaction may hold a page back a while).
   */
  async function followTopUps(
    after: string,
    forMs: number,
    count = Number.POSITIVE_INFINITY,
  ): Promise<{ amounts: string[]; next: string }> {
    const amounts: string[] = [];
    let next = after;
    const untilMs = Date.now() + forMs;
    while (Date.now() < untilMs && amounts.length < count) {
      const response = await api.admin("GET", `/events?type=CreditToppedUp&after=${next}&limit=10`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as {
        data: { data: { amountWon: string } }[];
        next: string | null;
      };
      amounts.push(...page.data.map((event) => event.data.amountWon));
      if (page.next !== null) next = page.next;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { amounts, next };
  }

  it("given a top-up placed early and committed late, then the follower is handed it, and every top-up once", async () => {
    await api.ledger.append({
      streamId: "account-user-first",
      expectedVersion: "no-stream",
      events: [topUp("first", "1", "first")],
    });
    const start = await followTopUps("0", 10_000, 1);
    expect(start.amounts).toEqual(["1"]);

    const early = new pg.Client({ connectionString: api.ledger.database.url });
    await early.connect();
    try {
      // The early transaction takes its place in the log, then a later top-up commits and is followed.
      await early.query("BEGIN");
      await early.query("SELECT pg_current_xact_id()");
      await api.ledger.append({
        streamId: "account-user-later",
        expectedVersion: "no-stream",
        events: [topUp("later", "2", "later")],
      });
      const meanwhile = await followTopUps(start.next, 500);

      // Only then does the early one write its top-up, at the place it took, and commit.
      const event = topUp("early", "3", "early");
      await early.query(
        `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version,
           data, metadata)
         SELECT pg_current_xact_id()::text::bigint + transaction_order_offset, $1, 'account-user-early', 0,
                'CreditToppedUp', 1, $2, $3
         FROM ledger_settings`,
        [event.eventId, JSON.stringify(event.event.data), JSON.stringify(metadata())],
      );
      await early.query("COMMIT");
      const after = await followTopUps(meanwhile.next, 10_000, 2 - meanwhile.amounts.length);

      expect([...meanwhile.amounts, ...after.amounts].sort()).toEqual(["2", "3"]);
    } finally {
      await early.query("ROLLBACK").catch(() => {});
      await early.end();
    }
  });
});
