import type pg from "pg";
import type { LedgerHarness } from "./ledger-harness";

/**
 * Tampering with a ledger as an attacker with database access would: the log's and the checkpoints' triggers
 * refusing any change turned off, the change made and committed, the triggers turned on again.
 */

/** The log's and the checkpoints' triggers refusing any change, off (as an attacker turns them) or on again. */
export async function immutability(client: pg.PoolClient, turn: "DISABLE" | "ENABLE"): Promise<void> {
  await client.query(`ALTER TABLE ledger_events ${turn} TRIGGER ledger_events_immutable`);
  await client.query(`ALTER TABLE ledger_checkpoints ${turn} TRIGGER ledger_checkpoints_immutable`);
}

/** Tampering committed, as `ledger` commands in their own processes see it. */
export async function commitTampering(
  harness: LedgerHarness,
  tamper: (client: pg.PoolClient) => Promise<void>,
): Promise<void> {
  const client = await harness.ledger.pool.connect();
  try {
    await client.query("BEGIN");
    await immutability(client, "DISABLE");
    await tamper(client);
    await immutability(client, "ENABLE");
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
}

/** Runs `check` with the tampering committed, then undoes it with `restore`. */
export async function whileTampered<Checked>(
  harness: LedgerHarness,
  tamper: (client: pg.PoolClient) => Promise<void>,
  restore: (client: pg.PoolClient) => Promise<void>,
  check: () => Promise<Checked>,
): Promise<Checked> {
  await commitTampering(harness, tamper);
  try {
    return await check();
  } finally {
    await commitTampering(harness, restore);
  }
}
