import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyIssued, keysOfAccounts, toppedUp } from "../../../bench/support/admission-fixtures";
import { allProjections } from "../../../projections";
import { inOneTransaction } from "../../../src/database/in-one-transaction";
import { limits } from "../../../src/kernel/limits";
import {
  accountsTouchedBy,
  accountsWithKeysChangedBy,
  headOf,
  type LedgerEvent,
} from "../../../src/ledger/events";
import {
  anythingChanged,
  type CheckpointChange,
  formatCheckpointNotification,
  parseCheckpointNotification,
} from "../../../src/ledger/projection/checkpoint-notification";
import { checkpointChannel, ProjectionRunner } from "../../../src/ledger/projection/projection-runner";
import { compareLogPositions, isAtOrAfter } from "../../../src/ledger/store/log-position";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { eventually } from "../../workers/queue-test-support";

/**
 * The projection runner's NOTIFY after each batch: the batch's range and the accounts its events touched,
 * or an empty payload ("anything may have changed") when that list would be long, and for a whole refold.
 */

const at = (commit: number) => ({ commit: BigInt(commit), prepare: 0n });
const change = (...touched: string[]): CheckpointChange => ({
  from: at(1),
  to: at(2),
  touched: new Set(touched),
});
const metadata = { actor: "admin", occurredAt: "2026-11-20T03:00:00.000Z" };

describe("the accounts an event touches", () => {
  it("are a key's owner, and the account a top-up, hold, usage, void or charge moves; none for prices", () => {
    const [key] = keysOfAccounts("owner", 1, 1);
    const events = [
      ...keyIssued(key!).events,
      ...toppedUp({ kind: "organization", id: "acme" }, "1", "touch").events,
    ].map((appended) => appended.event);
    const price: LedgerEvent = {
      type: "ModelPriceSet",
      data: {
        model: "alpha-5.4",
        inputUsdPerMillionTokens: "1",
        outputUsdPerMillionTokens: "1",
        cachedInputUsdPerMillionTokens: "1",
      },
      metadata,
    };
    const voided: LedgerEvent = {
      type: "UsageVoided",
      data: { requestId: "r1", account: { kind: "user", id: "payer" }, releasedWon: "1", reason: "shutdown" },
      metadata,
    };

    const heads = [...events, price, voided, ...events].map(headOf);
    expect(accountsTouchedBy(heads)).toEqual(new Set(["user:owner-0", "organization:acme", "user:payer"]));
    // Of those, only the key's owner had its keys changed: the others' money moved.
    expect(accountsWithKeysChangedBy(heads)).toEqual(new Set(["user:owner-0"]));
  });
});

describe("the checkpoint notification's payload", () => {
  it("carries the range and the names, and reads back as they were", () => {
    const payload = formatCheckpointNotification(change("user:a", "organization:b"), 10);

    expect(parseCheckpointNotification(payload)).toEqual(change("user:a", "organization:b"));
  });

  it("names the projections whose checkpoints stand at its end; a payload of the first release names none", () => {
    const named = { ...change("user:a"), projections: ["balances", "prices"] };
    const payload = formatCheckpointNotification(named, 10);

    expect(parseCheckpointNotification(payload)).toEqual(named);
    const { projections: _dropped, ...firstRelease } = JSON.parse(payload) as Record<string, unknown>;
    expect(parseCheckpointNotification(JSON.stringify(firstRelease))).toEqual(change("user:a"));
  });

  it("says whose keys changed; a payload of an earlier release says nothing of it (any may have)", () => {
    const told = { ...change("user:a", "user:b"), keysChanged: new Set(["user:b"]) };
    const payload = formatCheckpointNotification(told, 10);

    expect(parseCheckpointNotification(payload)).toEqual(told);
    const { keysChanged: _dropped, ...earlierRelease } = JSON.parse(payload) as Record<string, unknown>;
    expect(parseCheckpointNotification(JSON.stringify(earlierRelease))).toEqual(change("user:a", "user:b"));
  });

  it("says anything may have changed past the bound on names, or past PostgreSQL's 8,000 bytes", () => {
    expect(formatCheckpointNotification(change("user:a", "user:b", "user:c"), 2)).toBe(anythingChanged);
    const long = Array.from({ length: 10 }, (_, index) => `user:${String(index).repeat(1_000)}`);
    expect(formatCheckpointNotification(change(...long), 10)).toBe(anythingChanged);
  });

  it("given the service's bound, then names as many accounts as the payload holds: some 300 of 20 bytes", () => {
    const names = Array.from({ length: 300 }, (_, index) => `user:account-${String(index).padStart(7, "0")}`);
    expect(names[0]).toHaveLength(20);

    const payload = formatCheckpointNotification(change(...names), limits.touchedAccountsPerNotificationMax);

    expect(parseCheckpointNotification(payload)).toEqual(change(...names));
  });

  it("reads as 'anything may have changed' whatever it cannot vouch for", () => {
    const valid = JSON.parse(formatCheckpointNotification(change("user:a"), 10)) as Record<string, unknown>;
    for (const payload of [
      "", // a runner of an older release
      "not json",
      JSON.stringify({ ...valid, v: 2 }), // a later release's format
      JSON.stringify({ ...valid, from: valid.to, to: valid.from }),
      JSON.stringify({ ...valid, touched: "user:a" }),
    ]) {
      expect(parseCheckpointNotification(payload), payload).toBeUndefined();
    }
  });
});

describe("the projection runner's notifications", () => {
  let harness: LedgerHarness;
  let listener: pg.Client;
  const payloads: string[] = [];

  beforeAll(async () => {
    harness = await openLedgerHarness("checkpoint_notification");
    listener = new pg.Client({ connectionString: harness.database.url });
    await listener.connect();
    listener.on("notification", (message) => payloads.push(message.payload ?? ""));
    await listener.query(`LISTEN ${checkpointChannel}`);
  });

  afterAll(async () => {
    await listener?.end();
    await harness?.dispose();
  });

  it("name the batch's range and the accounts its events touched", async () => {
    const [key] = keysOfAccounts("notified", 1, 1);
    const before = harness.runner.lowestCheckpoint();
    await harness.append(keyIssued(key!), toppedUp({ kind: "organization", id: "acme" }, "5", "notified"));
    await harness.visible();
    payloads.length = 0;

    await harness.project();

    await eventually("the notification arrives", async () => payloads.length > 0);
    const changes = payloads.map(parseCheckpointNotification);
    expect(changes.every((notified) => notified !== undefined)).toBe(true);
    expect(new Set(changes.flatMap((notified) => [...notified!.touched]))).toEqual(
      new Set(["user:notified-0", "organization:acme"]),
    );
    // The harness's runner is told whose keys changed, as the service's is: the key's owner, not the top-up's.
    expect(new Set(changes.flatMap((notified) => [...notified!.keysChanged!]))).toEqual(
      new Set(["user:notified-0"]),
    );
    expect(compareLogPositions(changes[0]!.from, before)).toBe(0);
    expect(isAtOrAfter(changes.at(-1)!.to, harness.runner.lowestCheckpoint())).toBe(true);
    // And: where every checkpoint stands once the batch committed, for the waiters
    const checkpoints = await harness.ledger.pool.query<{ projection: string; commit_position: string }>(
      "SELECT projection, commit_position::text FROM projection_checkpoints",
    );
    expect(new Set(changes.at(-1)!.projections)).toEqual(new Set(allProjections.map(({ name }) => name)));
    for (const row of checkpoints.rows) expect(BigInt(row.commit_position)).toBe(changes.at(-1)!.to.commit);
  });

  // The last test: the runner below moves the checkpoints under the harness's runner.
  it("send one empty notification for batches applied in the caller's transaction (a refold)", async () => {
    await harness.append(
      ...Array.from({ length: 3 }, (_, index) => toppedUp({ kind: "user", id: "refold" }, "1", `r${index}`)),
    );
    await harness.visible();
    payloads.length = 0;
    // One event per batch: three batches, which with a payload each would be three notifications.
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections: allProjections,
      batchSizeMax: 1,
      standbyRetryMs: 100,
      touchedBy: accountsTouchedBy,
    });
    const client = await harness.ledger.pool.connect();
    try {
      await inOneTransaction(client, async () => {
        await runner.prepare(client);
        expect(await runner.catchUp(client, true)).toBe(3);
      });
    } finally {
      client.release();
    }

    await eventually("the notification arrives", async () => payloads.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(payloads).toEqual([anythingChanged]);
  });
});
