import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { rebuildProjections } from "../../../src/ledger/ledger-maintenance";
import type { ProjectionDefinition } from "../../../src/ledger/projection/projection";
import {
  ProjectionRunner,
  type ProjectionRunnerOptions,
  ProjectionsOfNewerReleaseError,
} from "../../../src/ledger/projection/projection-runner";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness, projectSyntheticLedger } from "../../support/ledger-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * A deploy that changes a projection's definition (its version) makes the next leader fold it from the
 * start of the log. Where the log is in PostgreSQL it refolds it in SQL, into a table swapped in at the end,
 * then catches it up with the others, all in the transaction that starts its leadership.
 */
describe("a projection whose definition changed, when a runner starts leading", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("projection_refold");
    await projectSyntheticLedger(harness, { eventCount: 5_000, seed: 5 });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  /** Starts a runner leading with these definitions; the returned function stops it. */
  const startRunner = (
    projections: readonly ProjectionDefinition[],
    sizes: { batchSizeMax: number; refoldChunkEventsMax: number },
    reports: Pick<ProjectionRunnerOptions, "onError" | "onRecovered" | "onStandingAside"> = {},
  ) => {
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections,
      standbyRetryMs: 50,
      ...sizes,
      ...reports,
    });
    const stop = new AbortController();
    const running = runner.run(stop.signal);
    return async () => {
      stop.abort();
      await running;
    };
  };
  const tableIdentity = async (table: string) =>
    (await harness.ledger.pool.query<{ oid: string }>("SELECT $1::regclass::oid::text AS oid", [table]))
      .rows[0]!.oid;
  const storedVersion = async (projection: string) =>
    (
      await harness.ledger.pool.query<{ definition_version: number }>(
        "SELECT definition_version FROM projection_checkpoints WHERE projection = $1",
        [projection],
      )
    ).rows[0]?.definition_version;

  // First: the tests after these bump the balances' definition, which the harness's runner then refuses.
  it("given a table an earlier release created without a column its definition has since gained, then the column is added and the refold fills it", async () => {
    // The discounts as the release before their stream version left them: no column, definition version 1.
    await harness.ledger.pool.query("ALTER TABLE projection_discounts DROP COLUMN stream_version");
    await harness.ledger.pool.query(
      "UPDATE projection_checkpoints SET definition_version = 1 WHERE projection = 'discounts'",
    );
    const removals = await harness.ledger.pool.query<{ count: string }>(
      "SELECT count(*) FROM ledger_events WHERE type = 'DiscountSet' AND data->>'rate' IS NULL",
    );
    expect(Number(removals.rows[0]!.count)).toBeGreaterThan(0);

    // Refolded by its events (a runner that is not the leader): the rows are deleted and folded again.
    const client = await harness.ledger.pool.connect();
    try {
      await client.query("BEGIN");
      await harness.runner.prepare(client);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    await harness.project();

    const rows = await harness.ledger.pool.query<{ rows: string; unversioned: string; versions: string }>(
      `SELECT count(*) AS rows, count(*) FILTER (WHERE stream_version IS NULL) AS unversioned,
              count(DISTINCT stream_version) AS versions
       FROM projection_discounts`,
    );
    expect(Number(rows.rows[0]!.rows)).toBeGreaterThan(10);
    expect(Number(rows.rows[0]!.unversioned)).toBe(0);
    expect(Number(rows.rows[0]!.versions)).toBeGreaterThan(1);
    expect(await storedVersion("discounts")).toBe(
      allProjections.find((projection) => projection.name === "discounts")!.version,
    );
    expect(
      await verifyProjections({
        pool: harness.ledger.pool,
        store: harness.store,
        projections: allProjections,
      }),
    ).toEqual([]);
  });

  it("given a projection a newer release folded, then this release never refolds it back, unless rebuilt with it", async () => {
    const discounts = allProjections.find((projection) => projection.name === "discounts")!;
    await harness.ledger.pool.query(
      "UPDATE projection_checkpoints SET definition_version = $1 WHERE projection = 'discounts'",
      [discounts.version + 1],
    );
    const rowsBefore = await harness.ledger.pool.query(
      "SELECT event_id FROM projection_discounts ORDER BY 1",
    );
    const client = await harness.ledger.pool.connect();
    try {
      await client.query("BEGIN");
      await expect(harness.runner.prepare(client, "sql")).rejects.toThrow(
        `the projections discounts (v${discounts.version + 1}, this process knows v${discounts.version}) are folded by a newer release`,
      );
      await client.query("ROLLBACK");

      // Running, it stands aside each time it takes the lock, and that is reported as such: not as a failure
      // followed by a recovery on every turn of the lock.
      const reported: string[] = [];
      const stop = startRunner(
        allProjections,
        { batchSizeMax: 1_000, refoldChunkEventsMax: 1_000 },
        {
          onError: (error) => reported.push(`error: ${String(error)}`),
          onRecovered: () => reported.push("recovered"),
          onStandingAside: (reason) =>
            reported.push(`aside: ${reason instanceof ProjectionsOfNewerReleaseError}`),
        },
      );
      try {
        await eventually(
          "the runner took the lock and stood aside three times",
          async () => reported.length >= 3,
        );
      } finally {
        await stop();
      }
      expect(new Set(reported)).toEqual(new Set(["aside: true"]));
      expect(await storedVersion("discounts")).toBe(discounts.version + 1);
      const rowsAfter = await harness.ledger.pool.query(
        "SELECT event_id FROM projection_discounts ORDER BY 1",
      );
      expect(rowsAfter.rows).toEqual(rowsBefore.rows);

      // The way back to this release: its rebuild folds every projection at its definitions, and it leads.
      await rebuildProjections(
        { pool: harness.ledger.pool, store: harness.store, projections: allProjections },
        { batchSizeMax: 1_000 },
      );
      expect(await storedVersion("discounts")).toBe(discounts.version);
      await client.query("BEGIN");
      await harness.runner.prepare(client, "sql");
      await client.query("COMMIT");
    } finally {
      client.release();
    }
  });

  it("given balances bumped, then they are refolded in SQL into a new table, caught up, and verify clean", async () => {
    const balances = allProjections.find((projection) => projection.name === "balances")!;
    const bumped: ProjectionDefinition[] = allProjections.map((projection) =>
      projection === balances ? { ...projection, version: projection.version + 1 } : projection,
    );
    const [balancesTable, billingTable] = ["projection_balances", "projection_billing_history"];
    const identities = {
      balances: await tableIdentity(balancesTable),
      billing: await tableIdentity(billingTable),
    };
    // Appended after the other projections' checkpoints: the refolded one and they must all catch it up.
    await harness.append({
      streamId: "account-user-after-bump",
      expectedVersion: "no-stream",
      events: [topUp("after-bump", "7", "bump")],
    });
    await harness.visible();

    const stop = startRunner(bumped, { batchSizeMax: 1_000, refoldChunkEventsMax: 1_000 });
    try {
      await eventually("the bumped balances hold the top-up appended after the bump", async () => {
        const balance = await harness.ledger.pool.query<{ balance_won: string }>(
          "SELECT balance_won::text FROM projection_balances WHERE account_kind = 'user' AND account_id = 'after-bump'",
        );
        return balance.rows[0]?.balance_won === "7";
      });
    } finally {
      await stop();
    }

    expect(await storedVersion("balances")).toBe(balances.version + 1);
    // Refolded in SQL: a new table took the old one's place; the billing history, unchanged, kept its own.
    expect(await tableIdentity(balancesTable)).not.toBe(identities.balances);
    expect(await tableIdentity(billingTable)).toBe(identities.billing);
    const accounts = await harness.ledger.pool.query<{ count: string }>(
      "SELECT count(*) FROM projection_balances WHERE account_kind = 'user'",
    );
    expect(Number(accounts.rows[0]!.count)).toBeGreaterThan(10);
    expect(
      await verifyProjections({ pool: harness.ledger.pool, store: harness.store, projections: bumped }),
    ).toEqual([]);
  });

  it("given top-ups appended all the while, then the refolded balances miss none and count none twice", async () => {
    const bumpedTwice: ProjectionDefinition[] = allProjections.map((projection) =>
      projection.name === "balances" ? { ...projection, version: projection.version + 2 } : projection,
    );
    let appending = true;
    let appended = 0;
    const appender = (async () => {
      while (appending) {
        await harness.store.append({
          streamId: "account-user-during-refold",
          expectedVersion: "any",
          events: [topUp("during-refold", "2.5", `during-${appended}`)],
        });
        appended++;
      }
    })();
    // Small chunks: the refold takes long enough for top-ups to land before, during and after it.
    const stop = startRunner(bumpedTwice, { batchSizeMax: 100, refoldChunkEventsMax: 200 });
    const toppedUp = async () =>
      (
        await harness.ledger.pool.query<{ topped_up_won: string }>(
          "SELECT topped_up_won::text FROM projection_balances WHERE account_kind = 'user' AND account_id = 'during-refold'",
        )
      ).rows[0]?.topped_up_won;
    try {
      await eventually(
        "the refolded balances are written",
        async () =>
          (await storedVersion("balances")) ===
          bumpedTwice.find((projection) => projection.name === "balances")!.version,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      appending = false;
      await appender;
      await eventually(
        "every top-up is in the balances",
        async () => (await toppedUp()) === String(2.5 * appended),
      );
    } finally {
      appending = false;
      await stop();
    }

    expect(appended).toBeGreaterThan(10);
    expect(await toppedUp()).toBe(String(2.5 * appended));
    expect(
      await verifyProjections({ pool: harness.ledger.pool, store: harness.store, projections: bumpedTwice }),
    ).toEqual([]);
  });
});
