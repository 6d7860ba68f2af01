import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { holdStatementInputOf } from "../../../src/billing/holds/postgres-usage-authorizations";
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
    for (const accountId of ["kim_sql", "kim_memory"])
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

  it.each<RebuildFold>(["sql", "memory"])(
    "given a hold that has locked its account's funds row, when a rebuild folding in %s reaches that row, then the hold is decided and the rebuild commits",
    async (fold) => {
      const before = await balanceChecksum(harness.ledger.pool);
      const accountId = `kim_${fold}`;
      const request = personalHoldRequest(`req_beside_${fold}_rebuild`, accountId);
      await withKeysActive(harness.ledger.pool, [request], async () => {
        const holderPid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!
          .pid;
        await holder.query("BEGIN");
        let rebuild: ReturnType<typeof rebuildProjections> | undefined;
        try {
          // ledger_authorize_usage's first step: the account's authorized row, locked.
          await holder.query(
            "SELECT 1 FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = $1 FOR UPDATE",
            [accountId],
          );
          rebuild = rebuildProjections(context(), { fold, batchSizeMax: 1_000 });
          rebuild.catch(() => {});
          await waitUntilBlockedBy(harness.ledger.pool, holderPid);

          // The rest of the hold: the same statement, on the row its transaction holds, reads the active keys.
          const decided = await holder.query<{ hold_won: string | null; refusal: string | null }>(
            "SELECT hold_won::text, refusal FROM ledger_authorize_usage($1::json)",
            [JSON.stringify([holdStatementInputOf(request, 0)])],
          );
          await holder.query("COMMIT");

          expect(decided.rows).toEqual([{ hold_won: "1", refusal: null }]);
          const rebuilt = await rebuild;
          expect(rebuilt.checksum).toEqual(before);
        } catch (error) {
          await holder.query("ROLLBACK").catch(() => {});
          await rebuild?.catch(() => {});
          throw error;
        }
      });
      expect(await verifyProjections(context())).toEqual([]);
      const funds = await harness.ledger.pool.query(
        `SELECT trim_scale(balance_won)::text AS balance, trim_scale(held_won)::text AS held
         FROM account_funds WHERE account_kind = 'user' AND account_id = $1`,
        [accountId],
      );
      // The hold stays open, counted once: its row, beside the funds the rebuild folded from the log.
      expect(funds.rows).toEqual([{ balance: "100", held: "1" }]);
    },
    60_000,
  );
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
