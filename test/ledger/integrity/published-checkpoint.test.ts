import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recomputeInlineFunds } from "../../../src/ledger/inline-funds";
import { eventChainHash, genesisHash } from "../../../src/ledger/integrity/event-hash";
import { sealCheckpoints } from "../../../src/ledger/integrity/ledger-checkpointer";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import { parsePublishedCheckpoint } from "../../../src/ledger/integrity/published-checkpoint";
import { ledgerCommandArgs } from "../../support/built-entries";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { whileTampered } from "../../support/ledger-tampering";

/**
 * A checkpoint published where the database's administrators cannot write (`ledger checkpoint`'s output)
 * catches what the log's own checks cannot: events removed together with the checkpoint that sealed them, and
 * a log rewritten and sealed again by a holder of the signing key.
 */

const run = promisify(execFile);
const signingKeyText = Buffer.alloc(32, 11).toString("base64");
const signingKey = LedgerSigningKey.parse(signingKeyText);
const otherKey = LedgerSigningKey.parse(Buffer.alloc(32, 12).toString("base64"));

let harness: LedgerHarness;
let directory: string;
/** The ledger's first checkpoint, published as soon as it was sealed. */
let first: { file: string; sequence: number; text: string };

async function ledgerCli(...args: string[]): Promise<{ code: number; output: string; stdout: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...ledgerCommandArgs, ...args], {
      env: { ...process.env, DATABASE_URL: harness.database.url, LEDGER_SIGNING_KEY: signingKeyText },
    });
    return { code: 0, output: stdout + stderr, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr, stdout: failed.stdout };
  }
}

async function seal(key = signingKey): Promise<void> {
  await harness.visible();
  const client = await harness.ledger.pool.connect();
  try {
    await sealCheckpoints(client, key, {
      eventsMax: 1_000,
      intervalMs: 0,
      checkpointsMax: 10,
      sealPartial: true,
    });
  } finally {
    client.release();
  }
}

/** The latest checkpoint as `ledger checkpoint` prints it, written to a file as an operator publishes it. */
async function publishLatestCheckpoint(
  name: string,
): Promise<{ file: string; sequence: number; text: string }> {
  const printed = await ledgerCli("checkpoint");
  expect(printed.code, printed.output).toBe(0);
  const file = join(directory, name);
  await writeFile(file, printed.stdout);
  return { file, sequence: JSON.parse(printed.stdout).sequence, text: printed.stdout };
}

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "published-checkpoint-"));
  harness = await openLedgerHarness("published_checkpoint");
  await harness.append({
    streamId: "account-user-mina",
    expectedVersion: "no-stream",
    events: [topUp("mina", "50000", "first"), topUp("mina", "20000", "second")],
  });
  await seal();
  await harness.project();
  first = await publishLatestCheckpoint("first.json");
}, 120_000);

afterAll(async () => {
  await harness?.dispose();
  await rm(directory, { recursive: true, force: true });
});

describe("npm run ledger -- verify --against <published checkpoint>", { timeout: 120_000 }, () => {
  it("given the ledger as it was published, then it says the ledger holds that checkpoint, unchanged", async () => {
    const verdict = await ledgerCli("verify", "--against", first.file);

    expect(verdict.code, verdict.output).toBe(0);
    expect(verdict.output).toContain(
      `verify: the ledger holds published checkpoint #${first.sequence}, unchanged`,
    );
    expect(verdict.output).toContain("verify: projections match the log");
  });

  it("given top-ups removed with the checkpoint that sealed them, then plain verify passes and --against names the loss", async () => {
    await harness.append({
      streamId: "account-user-late",
      expectedVersion: "no-stream",
      events: [topUp("late", "90000", "sealed, then removed")],
    });
    await seal();
    const published = await publishLatestCheckpoint("before-removal.json");
    const removeSealedTopUps = async (client: pg.PoolClient) => {
      await client.query(
        "CREATE TABLE removed_events AS SELECT * FROM ledger_events WHERE stream_id = 'account-user-late'",
      );
      await client.query(
        "CREATE TABLE removed_checkpoints AS SELECT * FROM ledger_checkpoints WHERE sequence = $1",
        [published.sequence],
      );
      await client.query("DELETE FROM ledger_events WHERE stream_id = 'account-user-late'");
      await client.query("DELETE FROM ledger_checkpoints WHERE sequence = $1", [published.sequence]);
      await recomputeInlineFunds(client);
    };
    const putBack = async (client: pg.PoolClient) => {
      await client.query("INSERT INTO ledger_events OVERRIDING SYSTEM VALUE SELECT * FROM removed_events");
      await client.query("INSERT INTO ledger_checkpoints SELECT * FROM removed_checkpoints");
      await client.query("DROP TABLE removed_events, removed_checkpoints");
      await recomputeInlineFunds(client);
    };

    const [plain, against] = await whileTampered(harness, removeSealedTopUps, putBack, async () => [
      await ledgerCli("verify"),
      await ledgerCli("verify", "--against", published.file),
    ]);

    // What the log's own checks cannot see.
    expect(plain!.code, plain!.output).toBe(0);
    expect(against!.code).toBe(1);
    expect(against!.output).toContain(
      `broken link: published checkpoint #${published.sequence} is missing from the ledger (removed, with the events it sealed or after them)`,
    );
    expect(against!.output).not.toContain("holds published checkpoint");
  });

  it("given the log rewritten and sealed again with the signing key, then --against names the checkpoint that differs", async () => {
    // A holder of the database and the key lowers mina's first top-up, chains the stream again, seals the
    // whole log again and rebuilds the projections: every check of the log's own holds.
    const rewrite = async (client: pg.PoolClient) => {
      await client.query("CREATE TABLE original_events AS SELECT * FROM ledger_events");
      await client.query("CREATE TABLE original_checkpoints AS SELECT * FROM ledger_checkpoints");
      await client.query(
        `UPDATE ledger_events SET data = jsonb_set(data::jsonb, '{amountWon}', '"5000"')::json
         WHERE stream_id = 'account-user-mina' AND stream_version = 0`,
      );
      await rechainStream(client, "account-user-mina");
      await client.query("DELETE FROM ledger_checkpoints");
      await recomputeInlineFunds(client);
    };
    const restore = async (client: pg.PoolClient) => {
      await client.query("DELETE FROM ledger_events");
      await client.query("DELETE FROM ledger_checkpoints");
      await client.query("INSERT INTO ledger_events OVERRIDING SYSTEM VALUE SELECT * FROM original_events");
      await client.query("INSERT INTO ledger_checkpoints SELECT * FROM original_checkpoints");
      await client.query("DROP TABLE original_events, original_checkpoints");
      await recomputeInlineFunds(client);
    };

    const [plain, against] = await whileTampered(harness, rewrite, restore, async () => {
      await seal();
      expect((await ledgerCli("rebuild")).code).toBe(0);
      return [await ledgerCli("verify"), await ledgerCli("verify", "--against", first.file)];
    });
    expect((await ledgerCli("rebuild")).code).toBe(0);

    expect(plain!.code, plain!.output).toBe(0);
    expect(against!.code).toBe(1);
    expect(against!.output).toContain(
      `broken link: published checkpoint #${first.sequence} differs from the ledger's checkpoint #${first.sequence} (the log up to it was rewritten and sealed again)`,
    );
  });

  it("refuses a file that is no checkpoint, one altered, or one another key signed", () => {
    const genuine = JSON.parse(first.text);
    const refusals = [
      ["{ sealed", "not JSON: give the checkpoint as `npm run ledger -- checkpoint` printed it"],
      [JSON.stringify({ ...genuine, eventsRoot: "zz" }), "eventsRoot: 32 bytes in lowercase hex"],
      [JSON.stringify({ ...genuine, last: "yesterday" }), "last: a log position such as 1234-56"],
      [
        JSON.stringify({ ...genuine, eventCount: genuine.eventCount + 1 }),
        `checkpoint #${genuine.sequence}'s fields do not hash to its checkpointHash`,
      ],
      [
        JSON.stringify({
          ...genuine,
          signature: otherKey.sign(Buffer.from(genuine.checkpointHash, "hex")).toString("hex"),
          publicKey: otherKey.publicKey.toString("hex"),
        }),
        `checkpoint #${genuine.sequence}'s signature is not valid under the ledger signing key: not a checkpoint this ledger sealed, or LEDGER_SIGNING_KEY is another key`,
      ],
    ];
    for (const [text, refusal] of refusals)
      expect(parsePublishedCheckpoint(text!, signingKey.publicKey)).toEqual({ refusal });
    expect(parsePublishedCheckpoint(first.text, signingKey.publicKey)).toHaveProperty(
      "checkpoint.sequence",
      1,
    );
  });

  it("exits 2 from `verify --against`, changing nothing, given a file it cannot use", async () => {
    const altered = join(directory, "altered.json");
    await writeFile(altered, JSON.stringify({ ...JSON.parse(first.text), eventCount: 2 ** 20 }));

    const verdicts = [
      await ledgerCli("verify", "--against", altered),
      await ledgerCli("verify", "--against", join(directory, "nowhere.json")),
      await ledgerCli("verify", "--against"),
    ];

    expect(verdicts.map((verdict) => verdict.code)).toEqual([2, 2, 2]);
    expect(verdicts[0]!.output).toContain(
      `verify: ${altered}: checkpoint #1's fields do not hash to its checkpointHash; this command changes nothing`,
    );
    expect(verdicts[1]!.output).toContain("nowhere.json: ENOENT");
    expect(verdicts[2]!.output).toContain(
      "usage: npm run ledger -- rebuild [--despite-broken-chains] | verify [--against <checkpoint file>]",
    );
    for (const verdict of verdicts) expect(verdict.output).not.toContain("verify: projections");
  });
});

/** Recomputes a stream's chain hashes in version order, as a holder of the database would after an edit. */
async function rechainStream(client: pg.PoolClient, streamId: string): Promise<void> {
  const events = await client.query<{
    event_id: string;
    stream_version: number;
    type: string;
    schema_version: number;
    data: string;
    metadata: string;
  }>(
    `SELECT event_id::text, stream_version, type, schema_version, data::text, metadata::text
     FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version`,
    [streamId],
  );
  let previous = genesisHash;
  for (const event of events.rows) {
    previous = eventChainHash(previous, {
      streamId,
      streamVersion: event.stream_version,
      eventId: event.event_id,
      type: event.type,
      schemaVersion: event.schema_version,
      dataText: event.data,
      metadataText: event.metadata,
    });
    await client.query("UPDATE ledger_events SET chain_hash = $2 WHERE event_id = $1", [
      event.event_id,
      previous,
    ]);
  }
}
