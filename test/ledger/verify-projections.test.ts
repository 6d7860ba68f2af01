import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { balancesProjection } from "../../projections/balances";
import { formatMoney, Money } from "../../src/kernel/money";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import { describeDifference } from "../../src/ledger/rebuild/projection-differences";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { topUp } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness, projectSyntheticLedger } from "../support/ledger-harness";

/**
 * Verify folds the log into temporary tables, spilling past `rowsInMemoryMax` rows as a rebuild does, and
 * lets the database find the rows that differ: these tests fold 20,000 events holding 200 rows at a time.
 */
describe("verifying projections against the log in bounded memory", () => {
  let harness: LedgerHarness;
  const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });
  const bounded = { rowsInMemoryMax: 200, pageSizeMax: 1_000 };

  beforeAll(async () => {
    harness = await openLedgerHarness("verify_projections");
    await projectSyntheticLedger(harness, { eventCount: 20_000, seed: 11 });
  }, 120_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  const won = (amount: string, plus: number) => formatMoney(new Money(amount).plus(plus));
  const billingRows = async (limit: number) =>
    (
      await harness.ledger.pool.query<{ request_id: string; amount_won: string }>(
        "SELECT request_id, amount_won::text FROM projection_billing_history ORDER BY request_id LIMIT $1",
        [limit],
      )
    ).rows;

  it("given an untouched ledger, then nothing differs, though the fold never held its rows at once", async () => {
    const charges = await harness.ledger.pool.query<{ count: string }>(
      "SELECT count(*) FROM projection_billing_history",
    );
    expect(Number(charges.rows[0]!.count)).toBeGreaterThan(10 * bounded.rowsInMemoryMax);

    expect(await verifyProjections(context(), bounded)).toEqual([]);
  });

  it("given the fold under way, then no session of it holds a transaction id from one page to the next: the log's readers are not held back", async () => {
    // The store shows readers only transactions older than the oldest one running on the server: a verify
    // whose transaction wrote throughout its fold would stop every projection until it ended. A write of
    // its own (a spill, each its own short transaction) may be caught at one page; none may span two.
    // Client sessions only: autovacuum's ANALYZE of the freshly loaded tables takes a transaction id too.
    const writersAtEachPage: string[][] = [];
    const store: typeof harness.store = Object.create(harness.store);
    store.readAll = async (options) => {
      const writers = await harness.ledger.pool.query<{ xid: string }>(
        `SELECT backend_xid::text AS xid FROM pg_stat_activity
         WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()
           AND backend_type = 'client backend'`,
      );
      writersAtEachPage.push(writers.rows.map((writer) => writer.xid));
      return harness.store.readAll(options);
    };

    expect(await verifyProjections({ ...context(), store }, bounded)).toEqual([]);
    expect(writersAtEachPage.length).toBeGreaterThan(10);
    const spanning = writersAtEachPage.flatMap((xids, page) =>
      xids.filter((xid) => page > 0 && writersAtEachPage[page - 1]!.includes(xid)),
    );
    expect(spanning).toEqual([]);
  });

  it("given its connections killed halfway, then it fails, and the next verify is clean", async () => {
    const verifying = verifyProjections(context(), { ...bounded, pageSizeMax: 200 });
    const killing = (async () => {
      for (let attempt = 0; attempt < 500; attempt++) {
        // Whatever verify is running now: its own statements, or the log reads that feed its fold.
        const killed = await harness.ledger.pool.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`,
        );
        if ((killed.rowCount ?? 0) > 0) return true;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return false;
    })();

    await expect(verifying).rejects.toThrow();
    expect(await killing).toBe(true);
    expect(await verifyProjections(context(), bounded)).toEqual([]);
  });

  it("given rows edited, deleted and added behind the log's back, then each is named", async () => {
    const [edited, deleted] = await billingRows(2);
    const balance = await harness.ledger.pool.query<{ account_id: string; balance_won: string }>(
      "SELECT account_id, balance_won::text FROM projection_balances WHERE account_kind = 'user' ORDER BY account_id LIMIT 1",
    );
    const account = balance.rows[0]!;
    await harness.ledger.pool.query(
      "UPDATE projection_billing_history SET amount_won = amount_won + 1 WHERE request_id = $1",
      [edited!.request_id],
    );
    await harness.ledger.pool.query("DELETE FROM projection_billing_history WHERE request_id = $1", [
      deleted!.request_id,
    ]);
    await harness.ledger.pool.query(
      `INSERT INTO projection_billing_history
       SELECT 'req_forged', account_kind, account_id, key_id, model, endpoint, started_at, charged_at, amount_won,
              breakdown
       FROM projection_billing_history WHERE request_id = $1`,
      [edited!.request_id],
    );
    await harness.ledger.pool.query(
      "UPDATE projection_balances SET balance_won = balance_won - 5 WHERE account_kind = 'user' AND account_id = $1",
      [account.account_id],
    );

    const differences = await verifyProjections(context(), bounded);

    expect(differences).toEqual([
      {
        projection: "balances",
        table: "projection_balances",
        key: JSON.stringify(["user", account.account_id]),
        kind: "column",
        column: "balance_won",
        live: won(account.balance_won, -5),
        expected: won(account.balance_won, 0),
      },
      {
        projection: "billing-history",
        table: "projection_billing_history",
        key: JSON.stringify([edited!.request_id]),
        kind: "column",
        column: "amount_won",
        live: won(edited!.amount_won, 1),
        expected: won(edited!.amount_won, 0),
      },
      {
        projection: "billing-history",
        table: "projection_billing_history",
        key: JSON.stringify([deleted!.request_id]),
        kind: "missing",
      },
      {
        projection: "billing-history",
        table: "projection_billing_history",
        key: JSON.stringify(["req_forged"]),
        kind: "unexpected",
      },
    ]);
  });

  it("given more differing rows than it lists, then it lists the first in key order and counts the rest", async () => {
    await harness.ledger.pool.query("DELETE FROM projection_billing_history");
    await harness.ledger.pool.query("DELETE FROM projection_balances");
    const charges = await harness.ledger.pool.query<{ count: string }>(
      "SELECT count(*) FROM ledger_events WHERE type = 'UsageCharged'",
    );
    const chargeCount = Number(charges.rows[0]!.count);

    const differences = await verifyProjections(context(), { ...bounded, rowsListedMax: 25 });

    const billing = differences.filter((difference) => difference.table === "projection_billing_history");
    expect(billing).toHaveLength(26);
    expect(billing.slice(0, 25).every((difference) => difference.kind === "missing")).toBe(true);
    const keys = billing.slice(0, 25).map((difference) => difference.key);
    expect(keys).toEqual([...keys].sort());
    expect(billing[25]).toEqual({
      projection: "billing-history",
      table: "projection_billing_history",
      key: "",
      kind: "more",
      count: chargeCount - 25,
    });
    expect(describeDifference(billing[25]!)).toBe(
      `billing-history projection_billing_history: ${chargeCount - 25} more rows differ, not listed`,
    );
  });

  it("leaves none of its temporary tables behind on the pooled connection", async () => {
    const client = await harness.ledger.pool.connect();
    try {
      const left = await client.query<{ count: string }>(
        `SELECT count(*) FROM pg_class
         WHERE relpersistence = 't' AND (relname LIKE '%\\_\\_live' OR relname LIKE '%\\_\\_expected')`,
      );
      expect(Number(left.rows[0]!.count)).toBe(0);
    } finally {
      client.release();
    }
  });
});

describe("verifying projections whose checkpoints differ", () => {
  let harness: LedgerHarness;
  const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });
  const checkpointOf = async (projection: string) =>
    (
      await harness.ledger.pool.query<{ commit_position: string; prepare_position: string }>(
        "SELECT commit_position::text, prepare_position::text FROM projection_checkpoints WHERE projection = $1",
        [projection],
      )
    ).rows[0];

  beforeAll(async () => {
    harness = await openLedgerHarness("verify_projections_behind");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given one projection folded further than another that handles the same event, then each is compared up to its own checkpoint, and nothing differs", async () => {
    await harness.append({
      streamId: "account-user-behind",
      expectedVersion: "any",
      events: [topUp("behind", "100", "folded by all")],
    });
    await harness.project();
    await harness.append({
      streamId: "account-user-behind",
      expectedVersion: "any",
      events: [topUp("behind", "25", "folded by balances only")],
    });
    await harness.visible();
    // Balances alone folds the second top-up; monthly statements, which sum top-ups too, stay before it.
    const balancesOnly = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections: [balancesProjection],
      batchSizeMax: 100,
      standbyRetryMs: 100,
    });
    const client = await harness.ledger.pool.connect();
    try {
      await balancesOnly.prepare(client);
      await balancesOnly.catchUp(client);
    } finally {
      client.release();
    }
    expect(await checkpointOf("balances")).not.toEqual(await checkpointOf("monthly-statements"));
    const months = await harness.ledger.pool.query(
      "SELECT top_ups_won::text FROM projection_statement_months WHERE account_id = 'behind'",
    );
    expect(months.rows).toEqual([{ top_ups_won: "100" }]);

    expect(await verifyProjections(context())).toEqual([]);
  });
});
