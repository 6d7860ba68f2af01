import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLeavesBetween } from "../../../src/ledger/integrity/checkpoint-leaves";
import {
  checkpointCovering,
  checkpointsAfter,
  latestCheckpoint,
} from "../../../src/ledger/integrity/ledger-checkpoint";
import { runCheckpointer, sealCheckpoints } from "../../../src/ledger/integrity/ledger-checkpointer";
import { verifyIntegrity } from "../../../src/ledger/integrity/ledger-integrity";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import type { LogPosition } from "../../../src/ledger/store/log-position";
import { metadata, topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

const key = LedgerSigningKey.parse(Buffer.alloc(32, 3).toString("base64url"));

describe("the checkpointer in worker processes", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("checkpointer");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  it("seals full checkpoints at once and the rest after the interval, with one leader among three", async () => {
    const stop = new AbortController();
    const options = {
      connectionString: harness.database.url,
      key,
      seal: { eventsMax: 5, intervalMs: 1_500, checkpointsMax: 100 },
      pollIntervalMs: 50,
    };
    // 12 events in place before any runner starts: 5 + 5 sealed at once, 2 only after the interval.
    const outcomes = await harness.store.appendBatch(
      Array.from({ length: 11 }, (_, index) => ({
        streamId: `account-user-c${index % 4}`,
        expectedVersion: "any" as const,
        events: [topUp(`c${index % 4}`, "1", `top-up ${index}`)],
      })),
    );
    expect(outcomes.every((outcome) => outcome.status === "fulfilled")).toBe(true);
    await harness.append({
      streamId: "account-user-c4",
      expectedVersion: "no-stream",
      events: [topUp("c4", "1", "last")],
    });
    await harness.visible();
    const errors: unknown[] = [];
    const runners = [0, 1, 2].map(() =>
      runCheckpointer({ ...options, onError: (error) => errors.push(error) }, stop.signal),
    );
    try {
      // Read by its sequence: the checkpoint after it comes 1.5 s later, a window a stalled poll could miss.
      const full = await waitFor(async () => (await checkpointsAfter(harness.ledger.pool, 1, 1))[0]);
      expect(full.eventCount).toBe(5);
      // The last 2 events wait for the interval, then are sealed on their own.
      const partial = await waitFor(async () => {
        const latest = await latestCheckpoint(harness.ledger.pool);
        return latest?.sequence === 3 ? latest : undefined;
      });
      expect(partial.eventCount).toBe(2);
      expect(partial.sealedAt.getTime() - full.sealedAt.getTime()).toBeGreaterThanOrEqual(1_500);
      const report = await verifyIntegrity(harness.ledger.pool, key.publicKey);
      expect(report.problems).toEqual([]);
      expect(report.checkpointCount).toBe(3);
      expect(errors).toEqual([]);
    } finally {
      stop.abort();
      await Promise.all(runners);
    }
  }, 30_000);
});

describe("a checkpoint beside a transaction still open", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("checkpoint_visibility");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  const seal = () => sealNow(harness);
  const positionOf = async (streamId: string) => (await harness.store.readStream(streamId))[0]!.position;

  it("leaves an open transaction's event unsealed, then seals it once committed", async () => {
    // Given: an event every reader sees
    await harness.append({
      streamId: "account-user-seen",
      expectedVersion: "no-stream",
      events: [topUp("seen", "1", "seen")],
    });
    await harness.visible();
    const open = await harness.ledger.pool.connect();
    try {
      // A transaction appends an event and stays open: its place in the log is taken, its commit to come
      const early = topUp("early", "1", "still open");
      await open.query("BEGIN");
      await open.query(
        `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type,
           schema_version, data, metadata)
         VALUES (pg_current_xact_id()::text::bigint + (SELECT transaction_order_offset FROM ledger_settings),
                 $1, 'account-user-early', 0, 'CreditToppedUp', 1, $2, $3)`,
        [early.eventId, JSON.stringify(early.event.data), JSON.stringify(metadata())],
      );
      // and an event committed after it, later in the log
      await harness.append({
        streamId: "account-user-later",
        expectedVersion: "no-stream",
        events: [topUp("later", "1", "committed later")],
      });

      // When
      const whileOpen = await seal();

      // Then: the checkpoint ends at the seen event; the later one waits, as the open one may land before it
      expect(whileOpen.map(({ eventCount, last }) => ({ eventCount, last }))).toEqual([
        { eventCount: 1, last: await positionOf("account-user-seen") },
      ]);

      // When the open transaction commits
      await open.query("COMMIT");
      await harness.visible();
      const afterCommit = await seal();

      // Then: the next checkpoint seals both, in log order, and the checkpoints verify
      expect(afterCommit).toHaveLength(1);
      const sealed = await readLeavesBetween(
        harness.ledger.pool,
        whileOpen[0]!.last,
        afterCommit[0]!.last,
        10,
      );
      expect(sealed.map((leaf) => leaf.eventId)).toEqual([
        early.eventId,
        (await harness.store.readStream("account-user-later"))[0]!.eventId,
      ]);
      expect(afterCommit[0]!.eventCount).toBe(2);
      expect((await verifyIntegrity(harness.ledger.pool, key.publicKey)).problems).toEqual([]);
    } finally {
      await open.query("ROLLBACK").catch(() => {});
      open.release();
    }
  });
});

describe("the checkpoint that seals an event", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("checkpoint_covering");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  /** Appends one top-up and seals it alone; its position and the checkpoint that ends at it. */
  const appendedAndSealed = async (account: string) => {
    await harness.append({
      streamId: `account-user-${account}`,
      expectedVersion: "no-stream",
      events: [topUp(account, "1", account)],
    });
    await harness.visible();
    const [checkpoint] = await sealNow(harness);
    return { position: (await harness.store.readStream(`account-user-${account}`))[0]!.position, checkpoint };
  };

  it("given an event a checkpoint ends at, then that checkpoint seals it, not the next; past the last, none does", async () => {
    // Given: two checkpoints, each ending at an event of its own
    const first = await appendedAndSealed("covered-first");
    const second = await appendedAndSealed("covered-second");
    expect([first.checkpoint?.last, second.checkpoint?.last]).toEqual([first.position, second.position]);

    // When / then: a receipt or a statement asks which checkpoint seals each
    const sequenceOf = async (position: LogPosition) => {
      const covering = await checkpointCovering(harness.ledger.pool, position);
      return covering && [covering.checkpoint.sequence, covering.previous?.sequence];
    };
    expect(await sequenceOf(first.position)).toEqual([first.checkpoint!.sequence, undefined]);
    expect(await sequenceOf(second.position)).toEqual([
      second.checkpoint!.sequence,
      first.checkpoint!.sequence,
    ]);
    expect(await sequenceOf({ ...second.position, prepare: second.position.prepare + 1n })).toBeUndefined();
  });
});

/** Seals every event visible now, however few, as checkpoints of at most 100. */
async function sealNow(harness: LedgerHarness) {
  const client = await harness.ledger.pool.connect();
  try {
    return await sealCheckpoints(client, key, {
      eventsMax: 100,
      intervalMs: 0,
      checkpointsMax: 10,
      sealPartial: true,
    });
  } finally {
    client.release();
  }
}

async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("timed out");
}
