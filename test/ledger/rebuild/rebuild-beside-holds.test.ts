import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { holdStatementInputOf } from "../../../src/billing/holds/postgres-usage-authorizations";
import type { UsageAuthorizationRequest } from "../../../src/billing/holds/usage-authorizations";
import {
  balanceChecksum,
  type RebuildFold,
  rebuildProjections,
} from "../../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { personalHoldRequest, withKeysActive } from "../../support/usage-authorizations";

/**
 * A rebuild runs while gateways place holds. A hold (ledger_authorize_usage) locks its accounts' funds rows,
 * then reads the active keys; the rebuild recomputes those rows and swaps in new projection tables. Here a
 * hold's transaction stops between the two steps, so the rebuild reaches the hold's row while the hold has
 * yet to read the active keys: whichever order the rebuild takes its locks in is then put to the test.
 */
describe("a rebuild beside holds", () => {
  let harness: LedgerHarness;
  let holder: pg.Client;
  const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });

  beforeAll(async () => {
    harness = await openLedgerHarness("rebuild_holds");
    // An account for each test, so each finds its account's funds as the log left them.
    for (const accountId of ["kim_sql", "kim_memory", "batch_amy", "batch_zed"])
      await harness.append({
        streamId: `account-user-${accountId}`,
        expectedVersion: "any",
        events: [topUp(accountId, "100", "t")],
      });
    await harness.project();
    // The accounts' authorized rows, as their earlier holds left them.
    await harness.ledger.pool.query(
      `INSERT INTO account_funds_authorized (account_kind, account_id)
       VALUES ('user', 'kim_sql'), ('user', 'kim_memory')`,
    );
    holder = new pg.Client({ connectionString: harness.database.url });
    await holder.connect();
  }, 60_000);
  afterAll(async () => {
    await holder?.end();
    await harness?.dispose();
  });

  /**
   * In the holder's transaction: `held`, then a rebuild until it waits for that transaction, then `rest`, and
   * commits. Answers what `rest` answered once the rebuild has committed, its balances those of the log.
   */
  async function besideRebuild<Result>(
    fold: RebuildFold,
    held: () => Promise<unknown>,
    rest: () => Promise<Result>,
  ): Promise<Result> {
    const before = await balanceChecksum(harness.ledger.pool);
    const holderPid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    await holder.query("BEGIN");
    let rebuild: ReturnType<typeof rebuildProjections> | undefined;
    try {
      await held();
      rebuild = rebuildProjections(context(), { fold, batchSizeMax: 1_000 });
      rebuild.catch(() => {});
      await waitUntilBlockedBy(harness.ledger.pool, holderPid);
      const answered = await rest();
      await holder.query("COMMIT");
      expect((await rebuild).checksum).toEqual(before);
      return answered;
    } catch (error) {
      await holder.query("ROLLBACK").catch(() => {});
      await rebuild?.catch(() => {});
      throw error;
    }
  }

  /** The hold statement, in the holder's transaction: each request's hold, or its refusal. */
  async function placeHolds(requests: readonly UsageAuthorizationRequest[]) {
    const decided = await holder.query<{ hold_won: string | null; refusal: string | null }>(
      "SELECT hold_won::text, refusal FROM ledger_authorize_usage($1::json)",
      [JSON.stringify(requests.map(holdStatementInputOf))],
    );
    return decided.rows;
  }

  async function fundsOf(accountId: string) {
    const funds = await harness.ledger.pool.query(
      `SELECT trim_scale(balance_won)::text AS balance, trim_scale(held_won)::text AS held
       FROM account_funds WHERE account_kind = 'user' AND account_id = $1`,
      [accountId],
    );
    return funds.rows;
  }

  it.each<RebuildFold>(["sql", "memory"])(
    "given a hold that has locked its account's funds row, when a rebuild folding in %s reaches that row, then the hold is decided and the rebuild commits",
    async (fold) => {
      const accountId = `kim_${fold}`;
      const request = personalHoldRequest(`req_beside_${fold}_rebuild`, accountId);
      const decided = await withKeysActive(harness.ledger.pool, [request], () =>
        besideRebuild(
          fold,
          // ledger_authorize_usage's first step: the account's authorized row, locked.
          () =>
            holder.query(
              "SELECT 1 FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = $1 FOR UPDATE",
              [accountId],
            ),
          // The rest of the hold: the same statement, on the row its transaction holds, reads the active keys.
          () => placeHolds([request]),
        ),
      );

      expect(decided).toEqual([{ hold_won: "1", refusal: null }]);
      expect(await verifyProjections(context())).toEqual([]);
      // The hold stays open, counted once: its row, beside the funds the rebuild folded from the log.
      expect(await fundsOf(accountId)).toEqual([{ balance: "100", held: "1" }]);
    },
    60_000,
  );

  it("given a batch of holds that has locked the first of its accounts' rows, when a rebuild recomputes the funds, then the batch is decided and the rebuild commits", async () => {
    // The second account's row first in the table, so that one deleted row by row it is locked first.
    await harness.ledger.pool.query(
      `DELETE FROM account_funds_authorized WHERE account_id IN ('batch_amy', 'batch_zed');
       INSERT INTO account_funds_authorized (account_kind, account_id) VALUES ('user', 'batch_zed');
       INSERT INTO account_funds_authorized (account_kind, account_id) VALUES ('user', 'batch_amy');`,
    );
    const inTableOrder = await harness.ledger.pool.query(
      "SELECT account_id FROM account_funds_authorized WHERE account_id LIKE 'batch_%' ORDER BY ctid",
    );
    expect(inTableOrder.rows).toEqual([{ account_id: "batch_zed" }, { account_id: "batch_amy" }]);
    const requests = [
      personalHoldRequest("req_batch_amy", "batch_amy"),
      personalHoldRequest("req_batch_zed", "batch_zed"),
    ];

    const decided = await withKeysActive(harness.ledger.pool, requests, () =>
      besideRebuild(
        "sql",
        // The batch's lock of its accounts' rows, in their order, stopped after the first.
        () =>
          holder.query(
            "SELECT 1 FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = 'batch_amy' FOR UPDATE",
          ),
        () => placeHolds(requests),
      ),
    );

    expect(decided).toEqual([
      { hold_won: "1", refusal: null },
      { hold_won: "1", refusal: null },
    ]);
    expect(await verifyProjections(context())).toEqual([]);
  }, 60_000);

  it("given an account's first hold placed and not yet committed, when a rebuild recomputes the funds, then the rebuild waits for it and commits", async () => {
    // Topped up since the last rebuild, which gave every account then funded its authorized row: none yet.
    await harness.append({
      streamId: "account-user-kim_new",
      expectedVersion: "any",
      events: [topUp("kim_new", "100", "t")],
    });
    await harness.project();
    const authorized = await harness.ledger.pool.query(
      "SELECT 1 FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = 'kim_new'",
    );
    expect(authorized.rows).toEqual([]);
    const request = personalHoldRequest("req_first_of_kim_new", "kim_new");

    let decided: Awaited<ReturnType<typeof placeHolds>> = [];

    // The hold inserts the account's authorized row, which the rebuild's recompute inserts too.
    await withKeysActive(harness.ledger.pool, [request], () =>
      besideRebuild(
        "sql",
        async () => {
          decided = await placeHolds([request]);
        },
        async () => {},
      ),
    );

    expect(decided).toEqual([{ hold_won: "1", refusal: null }]);
    expect(await verifyProjections(context())).toEqual([]);
    expect(await fundsOf("kim_new")).toEqual([{ balance: "100", held: "1" }]);
  }, 60_000);
});

/** Waits until some backend of the database waits for a lock `pid` holds (the rebuild, the only other). */
async function waitUntilBlockedBy(pool: pg.Pool, pid: number): Promise<void> {
  for (let attempt = 0; attempt < 3_000; attempt++) {
    const blocked = await pool.query<{ blocked: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                      WHERE datname = current_database() AND $1 = ANY(pg_blocking_pids(pid))) AS blocked`,
      [pid],
    );
    if (blocked.rows[0]?.blocked) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no backend came to wait for backend ${pid}`);
}
