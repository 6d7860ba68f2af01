import { Writable } from "node:stream";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { databaseSessionLimits } from "../../../src/kernel/limits";
import { type LocalReadModel, ProjectionWaiter } from "../../../src/ledger/projection/projection-waiter";
import type { RecordedEvent } from "../../../src/ledger/store/event-store";
import { logStart } from "../../../src/ledger/store/log-position";
import { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { creditToppedUp, runProjections } from "../../billing/billing-ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * Every LISTEN connection survives losing PostgreSQL for longer than a blink: its backend is terminated
 * and the database refuses connections for 1.5 s, twice. The connection comes back, says so once, and
 * what was notified while it was away is read at once — not at the next poll (set to a minute here, so
 * only a notification or the reconnect itself can explain a prompt answer).
 *
 * Test files share a server, and a log reader sees an event only once every older transaction on the
 * server has ended: the test waits until its events are visible before it expects them to be read.
 */

const outageMs = 1_500;
const pollIntervalMs = 60_000;
/**
 * Prompt: within the reconnect's longest backoff, and a margin, of the database taking connections again. An
 * outage that waits out other files' transactions runs longer than 1.5 s, and the reconnect's backoff grows
 * with it to its cap; a minute's poll is still far off.
 */
const promptMs = databaseSessionLimits.listenReconnectDelayMaxMs + 5_000;
/** Waiting for projections includes waiting out other test files' transactions (see above). */
const projectionWaitMs = 30_000;
const account = { kind: "user", id: "listener" } as const;

let harness: LedgerHarness;
let admin: pg.Client;

beforeAll(async () => {
  harness = await openLedgerHarness("listen_reconnect");
  admin = new pg.Client({ connectionString: inject("postgresServerUrl") });
  await admin.connect();
});

afterAll(async () => {
  await admin?.query(`ALTER DATABASE ${harness.database.name} ALLOW_CONNECTIONS true`).catch(() => {});
  await admin?.end();
  await harness?.dispose();
});

/** Terminates the backends of `applicationName` in the test's database while it refuses new connections. */
async function outage(applicationName: string, duringOutage: () => Promise<void> = async () => {}) {
  // The pool is filled to its bound before the outage, so it cannot open a connection during it: an
  // append, its NOTIFY, the visibility check and the subscriber's read take pooled ones. Filling it only
  // part way left a race: a read woken just before the outage could still be opening a connection when
  // the database began refusing them.
  const pool = harness.ledger.pool;
  await Promise.all(Array.from({ length: pool.options.max }, () => pool.query("SELECT pg_sleep(0.01)")));
  expect(pool.totalCount).toBe(pool.options.max);
  const database = harness.database.name;
  await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
  try {
    const terminated = await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
      [database, applicationName],
    );
    expect(terminated.rows.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, outageMs / 2));
    await duringOutage();
    await new Promise((resolve) => setTimeout(resolve, outageMs / 2));
  } finally {
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
  }
}

/** Appends a top-up and waits until log readers can see it. */
async function appendVisible(): Promise<void> {
  const appended = await harness.store.append(creditToppedUp(account, "1", "2026-11-20T00:00:00.000Z"));
  await eventually(
    "the event is visible",
    async () => {
      const tail = await harness.store.readAll({ limit: 100_000 });
      return tail.some(
        (event) => event.streamId === appended.streamId && event.streamVersion === appended.streamVersion,
      );
    },
    projectionWaitMs,
  );
}

function capturedLogger() {
  const messages: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      messages.push((JSON.parse(String(chunk)) as { msg: string }).msg);
      done();
    },
  });
  return { logger: pino({ level: "info" }, destination), messages };
}

describe("LISTEN connections after PostgreSQL goes away", () => {
  it("the projection waiter reconnects, has its copies re-read, and is woken by notifications again", async () => {
    // Given: projections running, and a waiter with a local copy that counts its refreshes
    const projections = await runProjections(harness);
    const { logger, messages } = capturedLogger();
    const waiter = new ProjectionWaiter(harness.ledger.pool, harness.database.url, pollIntervalMs, {
      logger,
    });
    let refreshes = 0;
    const copy: LocalReadModel = {
      projections: ["balances"],
      checkpointsAdvanced: () => {
        refreshes += 1;
      },
      catchUpTo: async () => {},
    };
    waiter.addLocalReadModel(copy);
    await waiter.start();
    try {
      for (let round = 1; round <= 2; round += 1) {
        // When: the waiter's connection is cut, and a top-up is projected while it is away
        const refreshesBefore = refreshes;
        await outage("projection-waiter", async () => {
          await harness.store.append(creditToppedUp(account, "1", "2026-11-20T00:00:00.000Z"));
        });

        // Then: it is back, and the copy re-read without any notification of the missed commit
        await eventually(
          "the copy re-read after the reconnect",
          async () => refreshes > refreshesBefore,
          promptMs,
        );
        expect(messages.filter((message) => message.startsWith("lost the LISTEN"))).toHaveLength(round);
        await eventually(
          "the reconnect is logged",
          async () => messages.filter((message) => message.endsWith("restored")).length === round,
          promptMs,
        );

        // And: a later commit is announced again (the poll would take a minute)
        const appended = await harness.store.append(creditToppedUp(account, "1", "2026-11-20T00:00:00.000Z"));
        const startedAtMs = Date.now();
        await waiter.waitFor(appended.position, ["balances"], projectionWaitMs);
        expect(Date.now() - startedAtMs).toBeLessThan(pollIntervalMs);
      }
    } finally {
      await waiter.close();
      await projections.stop();
    }
  }, 120_000);

  it("the event store's listener reconnects and its subscriber reads what was appended meanwhile", async () => {
    // Given: a subscriber on a store that polls once a minute
    const { logger, messages } = capturedLogger();
    const store = await PostgresEventStore.open({
      pool: harness.ledger.pool,
      listenConnectionString: harness.database.url,
      pollIntervalMs,
      logger,
    });
    const seen: RecordedEvent[] = [];
    const stopping = new AbortController();
    const subscribed = store.subscribe({
      after: logStart,
      batchSizeMax: 1_000,
      signal: stopping.signal,
      handle: async (events) => {
        seen.push(...events);
      },
    });
    try {
      await eventually("the subscriber caught up", async () => {
        const all = await harness.store.readAll({ limit: 100_000 });
        return seen.length === all.length;
      });
      for (let round = 1; round <= 2; round += 1) {
        // When: its LISTEN connection is cut, and an event is appended while it is away
        const seenBefore = seen.length;
        await outage("ledger-listen", async () => {
          await appendVisible();
        });

        // Then: the subscriber reads it once the connection is back, not a minute later
        await eventually("the missed event is read", async () => seen.length === seenBefore + 1, promptMs);
        expect(messages.filter((message) => message.startsWith("lost the LISTEN"))).toHaveLength(round);

        // And: notifications wake it again
        await appendVisible();
        await harness.ledger.pool.query("SELECT pg_notify('ledger_events', '')");
        await eventually("a later event is read", async () => seen.length === seenBefore + 2, promptMs);
      }
      expect(messages.filter((message) => message.endsWith("restored"))).toHaveLength(2);
    } finally {
      stopping.abort();
      await subscribed;
      await store.close();
    }
  }, 120_000);
});
