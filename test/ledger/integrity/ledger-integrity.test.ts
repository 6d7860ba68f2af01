import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendSyntheticLedger } from "../../../bench/support/synthetic-ledger";
import { rowEventOf } from "../../../src/billing/holds/hold-row-completion";
import { buildChargeReceipt, readChargeEvents } from "../../../src/billing/receipts/charge-receipt";
import { brokenChainLinks } from "../../../src/ledger/integrity/broken-chain-links";
import { isProven, proveEvent } from "../../../src/ledger/integrity/event-proof";
import { sealCheckpoints } from "../../../src/ledger/integrity/ledger-checkpointer";
import { verifyIntegrity } from "../../../src/ledger/integrity/ledger-integrity";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import type { StreamAppend } from "../../../src/ledger/store/event-store";
import { ledgerCommandArgs } from "../../support/built-entries";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { immutability, whileTampered } from "../../support/ledger-tampering";
import { holdRowCompletionOf, logSettledHolds } from "../../support/settled-holds";
import { usageAuthorizationsOf } from "../../support/usage-authorizations";

const run = promisify(execFile);
const signingKeyText = Buffer.alloc(32, 7).toString("base64");
const signingKey = LedgerSigningKey.parse(signingKeyText);
const attackerKey = LedgerSigningKey.parse(Buffer.alloc(32, 9).toString("base64"));
const sealOptions = { eventsMax: 1_500, intervalMs: 0, checkpointsMax: 100, sealPartial: true };

async function ledgerCli(
  args: string[],
  databaseUrl: string,
): Promise<{ code: number; output: string; stdout: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...ledgerCommandArgs, ...args], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LEDGER_SIGNING_KEY: signingKeyText },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr, stdout: failed.stdout };
  }
}

/** Tampers as an attacker with database access would, runs `check` on the result, then rolls it back. */
async function afterTampering<Checked>(
  harness: LedgerHarness,
  tamper: (client: pg.PoolClient) => Promise<void>,
  check: (client: pg.PoolClient) => Promise<Checked>,
): Promise<Checked> {
  const client = await harness.ledger.pool.connect();
  try {
    await client.query("BEGIN");
    await immutability(client, "DISABLE");
    await tamper(client);
    return await check(client);
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

/** What `verify` finds after the tampering. */
function problemsAfter(harness: LedgerHarness, tamper: (client: pg.PoolClient) => Promise<void>) {
  return afterTampering(
    harness,
    tamper,
    async (client) => (await verifyIntegrity(client, signingKey.publicKey)).problems,
  );
}

async function seal(harness: LedgerHarness): Promise<void> {
  await harness.visible();
  const client = await harness.ledger.pool.connect();
  try {
    await sealCheckpoints(client, signingKey, sealOptions);
  } finally {
    client.release();
  }
}

/** Inserts a forged event inside checkpoint #`sequence`'s range (a transaction order between its bounds). */
async function insertForgedEventInto(client: pg.PoolClient, sequence: number): Promise<void> {
  const bounds = await client.query<{ after: string; last: string }>(
    `SELECT previous.last_transaction_order::text AS after, sealing.last_transaction_order::text AS last
     FROM ledger_checkpoints sealing JOIN ledger_checkpoints previous ON previous.sequence = sealing.sequence - 1
     WHERE sealing.sequence = $1`,
    [sequence],
  );
  const { after, last } = bounds.rows[0]!;
  expect(BigInt(after) + 1n).toBeLessThan(BigInt(last));
  await client.query(
    `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
     VALUES ($1::bigint + 1, gen_random_uuid(), 'account-user-forged', 0, 'CreditToppedUp', 1,
             '{"account":{"kind":"user","id":"forged"},"amountWon":"1000000","reference":"forged"}',
             '{"actor":"forger","occurredAt":"2026-11-20T03:00:00.000Z"}')`,
    [after],
  );
}

/** The event a checkpoint's range ends with. */
async function lastEventOf(harness: LedgerHarness, sequence: number): Promise<string> {
  const last = await harness.ledger.pool.query<{ event_id: string }>(
    `SELECT event.event_id::text FROM ledger_events event JOIN ledger_checkpoints checkpoint
       ON (event.transaction_order, event.position) = (checkpoint.last_transaction_order, checkpoint.last_position)
     WHERE checkpoint.sequence = $1`,
    [sequence],
  );
  return last.rows[0]!.event_id;
}

describe("ledger hash chains and signed checkpoints", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("integrity");
    // Batched appends put several events of one stream in one statement: the trigger chains them in order.
    await appendSyntheticLedger(harness.store, { eventCount: 4_000, seed: 16, batchSize: 200 });
    await harness.append({
      streamId: "account-user-유나",
      expectedVersion: "no-stream",
      events: [topUp("유나", "1000", "충전 ₩1,000 🎉"), topUp("유나", "2", "second")],
    });
    // Another insert path, as a SQL function would write: no hash given, the trigger chains each row.
    await harness.ledger.pool.query(
      `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
       SELECT pg_current_xact_id()::text::bigint, gen_random_uuid(), 'account-user-유나', version, 'CreditToppedUp', 1,
              json_build_object('account', json_build_object('kind', 'user', 'id', '유나'), 'amountWon', '5', 'reference', 'sql ' || version),
              '{"actor": "funds-function",  "occurredAt": "2026-11-20T03:00:00.000Z"}'
       FROM generate_series(2, 3) version ORDER BY version`,
    );
    // Holds logged with their settlement: the log writer computes both links itself (no trigger), so verify
    // recomputes them.
    const startedAt = new Date().toISOString();
    const held = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage(
      ["첫째", "둘째"].map((label, index) => ({
        eventId: randomUUID(),
        data: {
          requestId: `req_유나_${index}`,
          keyId: "6a1f4f5e-8c4b-4d0e-9a57-1c2b3d4e5f60",
          account: { kind: "user" as const, id: "유나" },
          userId: "유나",
          organizationId: null,
          model: "alpha-5.4-mini",
          endpoint: "responses" as const,
          streamed: false,
          startedAt,
          estimate: { inputTokensMax: 100, outputTokensMax: 100, estimatedWon: `2.${index}` },
          gatewayInstance: `gateway ${label}`,
          expiresAt: startedAt,
        },
      })),
    );
    expect(held.map((decision) => decision.kind)).toEqual(["held", "held"]);
    for (const index of [0, 1]) {
      const requestId = `req_유나_${index}`;
      await holdRowCompletionOf(harness.ledger.pool).complete({
        requestId,
        settlement: rowEventOf(randomUUID(), {
          type: "UsageVoided",
          data: {
            requestId,
            account: { kind: "user", id: "유나" },
            releasedWon: `2.${index}`,
            reason: "shutdown",
          },
          metadata: { actor: "key:x", correlationId: requestId, occurredAt: startedAt },
        }),
        pendingWon: "0",
      });
    }
    await logSettledHolds(harness.ledger.pool, harness.store);
    await seal(harness);
  }, 120_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("verifies a clean ledger: every chain recomputes in TypeScript, every checkpoint is signed", async () => {
    const report = await verifyIntegrity(harness.ledger.pool, signingKey.publicKey);
    expect(report.problems).toEqual([]);
    expect(report.checkpointCount).toBeGreaterThanOrEqual(3);
    expect(report.unsealedEventCount).toBe(0);
    expect(report.eventCount).toBeGreaterThanOrEqual(4_000);
    const sqlWritten = await harness.ledger.pool.query<{ hashed: number }>(
      "SELECT count(chain_hash)::int AS hashed FROM ledger_events WHERE stream_id = 'account-user-유나'",
    );
    expect(sqlWritten.rows[0]!.hashed).toBe(4);
    const holds = await harness.ledger.pool.query<{ hashed: number }>(
      "SELECT count(chain_hash)::int AS hashed FROM ledger_events WHERE stream_id LIKE 'usage-req_유나_%'",
    );
    expect(holds.rows[0]!.hashed).toBe(4);
  });

  it("names an event whose data was updated", async () => {
    const victim = await harness.ledger.pool.query<{
      event_id: string;
      stream_id: string;
      stream_version: number;
    }>(
      "SELECT event_id::text, stream_id, stream_version FROM ledger_events WHERE type = 'UsageCharged' ORDER BY position LIMIT 1 OFFSET 100",
    );
    const { event_id, stream_id, stream_version } = victim.rows[0]!;
    const problems = await problemsAfter(harness, async (client) => {
      await client.query(
        `UPDATE ledger_events SET data = replace(data::text, '"amountWon":"', '"amountWon":"1')::json WHERE event_id = $1`,
        [event_id],
      );
    });
    expect(problems).toContain(
      `stream ${stream_id} version ${stream_version} (event ${event_id}): chain hash does not match the event (its contents, version or predecessor were changed)`,
    );
    // The checkpoint's leaf is the stored chain hash, which the attacker left alone: the chain catches it.
    expect(problems).toHaveLength(1);
  });

  it("counts every broken stream when more are broken than it names, naming the first 100", async () => {
    const altered = 150;
    const report = await afterTampering(
      harness,
      async (client) => {
        // Each of 150 streams' first event given a space after its metadata: the JSON means the same, the
        // text its chain hash covers does not.
        await client.query(
          `UPDATE ledger_events SET metadata = (metadata::text || ' ')::json
           WHERE stream_version = 0 AND stream_id IN (
             SELECT DISTINCT stream_id FROM ledger_events ORDER BY stream_id LIMIT $1)`,
          [altered],
        );
      },
      (client) => verifyIntegrity(client, signingKey.publicKey),
    );
    expect(report.problems).toHaveLength(100);
    expect(report.problemCount).toBe(altered);
    expect(report.problems.every((problem) => problem.includes("chain hash does not match"))).toBe(true);
  });

  it("names the checkpoint that sealed a stream's deleted last event", async () => {
    const victim = await harness.ledger.pool.query<{ event_id: string; position: string }>(
      `SELECT event_id::text, position::text FROM ledger_events last
       WHERE stream_version = (SELECT max(stream_version) FROM ledger_events same WHERE same.stream_id = last.stream_id)
       ORDER BY position LIMIT 1 OFFSET 10`,
    );
    const sequence = await sealingCheckpoint(harness, victim.rows[0]!.event_id);
    const problems = await problemsAfter(harness, async (client) => {
      await client.query("DELETE FROM ledger_events WHERE event_id = $1", [victim.rows[0]!.event_id]);
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      new RegExp(
        `^checkpoint #${sequence}: sealed \\d+ events after .* through .*, the log now holds \\d+ there \\(events removed\\)$`,
      ),
    );
  });

  it("names the checkpoint whose events were reordered", async () => {
    const pair = await harness.ledger.pool.query<{ event_id: string; transaction_order: string }>(
      `SELECT DISTINCT ON (transaction_order) event_id::text, transaction_order::text FROM ledger_events
       ORDER BY transaction_order, position LIMIT 2`,
    );
    const [first, second] = pair.rows;
    const sequence = await sealingCheckpoint(harness, second!.event_id);
    expect(await sealingCheckpoint(harness, first!.event_id)).toBe(sequence);
    const problems = await problemsAfter(harness, async (client) => {
      await client.query(
        `UPDATE ledger_events SET transaction_order = CASE event_id WHEN $1::uuid THEN $4::bigint ELSE $3::bigint END
         WHERE event_id IN ($1::uuid, $2::uuid)`,
        [first!.event_id, second!.event_id, first!.transaction_order, second!.transaction_order],
      );
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      new RegExp(
        `^checkpoint #${sequence}: the events after .* no longer match its root \\(an event was changed or the order altered\\)$`,
      ),
    );
  });

  it("names a checkpoint whose signature was forged", async () => {
    const problems = await problemsAfter(harness, async (client) => {
      const stored = await client.query<{ checkpoint_hash: Buffer }>(
        "SELECT checkpoint_hash FROM ledger_checkpoints WHERE sequence = 2",
      );
      await client.query("UPDATE ledger_checkpoints SET signature = $1, public_key = $2 WHERE sequence = 2", [
        attackerKey.sign(stored.rows[0]!.checkpoint_hash),
        attackerKey.publicKey,
      ]);
    });
    expect(problems).toEqual([
      "checkpoint #2: signature is not valid under the ledger signing key (forged or altered)",
    ]);
  });

  it("names a removed checkpoint", async () => {
    const problems = await problemsAfter(harness, async (client) => {
      await client.query("DELETE FROM ledger_checkpoints WHERE sequence = 2");
    });
    expect(problems).toEqual(["checkpoint #2 is missing (removed): checkpoint #3 follows #1"]);
  });

  it("proves an event's inclusion in a signed checkpoint", async () => {
    const event = await harness.ledger.pool.query<{ event_id: string }>(
      "SELECT event_id::text FROM ledger_events ORDER BY transaction_order, position LIMIT 1 OFFSET 2000",
    );
    const proof = await proveEvent(harness.ledger.pool, event.rows[0]!.event_id);
    expect(proof?.checkpoint?.rootMatches).toBe(true);
    expect(proof?.checkpoint?.inclusionPath.length).toBeGreaterThan(5);
    expect(proof?.checkpoint?.publicKey).toBe(signingKey.publicKey.toString("hex"));
  });

  it("refuses to call proven an event whose bytes were altered, or one sealed by a forged checkpoint", async () => {
    const event = await harness.ledger.pool.query<{ event_id: string }>(
      "SELECT event_id::text FROM ledger_events ORDER BY transaction_order, position LIMIT 1 OFFSET 1500",
    );
    const eventId = event.rows[0]!.event_id;
    const honest = await proveEvent(harness.ledger.pool, eventId, signingKey.publicKey);
    expect(honest?.event.hashMatches).toBe(true);
    expect(honest?.checkpoint).toMatchObject({ rootMatches: true, hashMatches: true, signatureValid: true });
    expect(isProven(honest!)).toBe(true);

    const proofAfter = (tamper: (client: pg.PoolClient) => Promise<void>) =>
      afterTampering(
        harness,
        tamper,
        async (client) => (await proveEvent(client, eventId, signingKey.publicKey))!,
      );
    // Its data edited, its chain hash left as it was: the leaf still leads to the root, the bytes do not.
    const altered = await proofAfter(async (client) => {
      await client.query(
        `UPDATE ledger_events SET data = jsonb_set(data::jsonb, '{tampered}', 'true')::json WHERE event_id = $1`,
        [eventId],
      );
    });
    expect(altered.event.hashMatches).toBe(false);
    expect(altered.checkpoint?.rootMatches).toBe(true);
    expect(isProven(altered)).toBe(false);
    // The sealing checkpoint's signature zeroed.
    const forged = await proofAfter(async (client) => {
      await client.query("UPDATE ledger_checkpoints SET signature = $1 WHERE sequence = $2", [
        Buffer.alloc(64),
        honest!.checkpoint!.sequence,
      ]);
    });
    expect(forged.checkpoint?.signatureValid).toBe(false);
    expect(isProven(forged)).toBe(false);
  });

  it("proves an event named by the log position the console shows as by its id, with `ledger prove`", async () => {
    const event = await harness.ledger.pool.query<{ event_id: string; position: string }>(
      `SELECT event_id::text, transaction_order || '-' || position AS position FROM ledger_events
       ORDER BY transaction_order, position LIMIT 1 OFFSET 1000`,
    );
    const { event_id: eventId, position } = event.rows[0]!;

    const byId = await ledgerCli(["prove", eventId], harness.database.url);
    const byPosition = await ledgerCli(["prove", position], harness.database.url);

    expect(byId.code).toBe(0);
    expect(byPosition).toEqual(byId);
    expect(byPosition.output).toContain('"rootMatches": true');
    expect(JSON.parse(byId.stdout)).toMatchObject({ checkpoint: { rootMatches: true } });
    expect(await ledgerCli(["prove", "1-1"], harness.database.url)).toMatchObject({
      code: 4,
      output: "no event at 1-1\n",
    });
    expect((await ledgerCli(["prove", "yesterday"], harness.database.url)).code).toBe(2);
    // A position past the log's 64-bit integers is bad input, said as such, not a database error.
    expect(await ledgerCli(["prove", "99999999999999999999-1"], harness.database.url)).toMatchObject({
      code: 2,
      output:
        "not a log position: 99999999999999999999-1 (each part is at most 9223372036854775807, at least -9223372036854775808)\n",
    });
    expect(await ledgerCli(["prove", "1--9223372036854775809"], harness.database.url)).toMatchObject({
      code: 2,
      output: expect.stringMatching(/^not a log position: 1--9223372036854775809 /),
    });
    // An event appended after the last seal: its proof, without a checkpoint, and 3: ask again later.
    const unsealed = topUp("prove-later", "1", "after the seal");
    await harness.append({
      streamId: "account-user-prove-later",
      expectedVersion: "any",
      events: [unsealed],
    });
    const later = await ledgerCli(["prove", unsealed.eventId], harness.database.url);
    expect(later.code).toBe(3);
    expect(JSON.parse(later.stdout).checkpoint ?? null).toBeNull();
    expect(later.output).toContain(`event ${unsealed.eventId} is not sealed by a checkpoint yet`);
  }, 120_000);

  it("calls a sealed event's proof broken, not unsealed, when its checkpoint's range no longer holds what it sealed", async () => {
    const eventId = await lastEventOf(harness, 2);
    const proofAfter = (tamper: (client: pg.PoolClient) => Promise<void>) =>
      afterTampering(
        harness,
        tamper,
        async (client) => (await proveEvent(client, eventId, signingKey.publicKey))!,
      );
    // A forged event inside the range: the range's real last event would fall off a read of its count.
    const inserted = await proofAfter((client) => insertForgedEventInto(client, 2));
    expect(inserted.checkpoint).toBeUndefined();
    expect(inserted.rangeBroken?.sequence).toBe(2);
    expect(inserted.rangeBroken?.problem).toMatch(
      /^checkpoint #2 sealed \d+ events after .* through .*, the log now holds more there \(events inserted or removed\)$/,
    );
    expect(isProven(inserted)).toBe(false);
    const oversized = await proofAfter(async (client) => {
      await client.query("UPDATE ledger_checkpoints SET event_count = 100001 WHERE sequence = 2");
    });
    expect(oversized.rangeBroken).toEqual({
      sequence: 2,
      problem: "checkpoint #2 claims 100001 events, more than any checkpoint seals",
    });

    const shrunk = await whileTampered(
      harness,
      async (client) => {
        await client.query("UPDATE ledger_checkpoints SET event_count = event_count - 1 WHERE sequence = 2");
      },
      async (client) => {
        await client.query("UPDATE ledger_checkpoints SET event_count = event_count + 1 WHERE sequence = 2");
      },
      () => ledgerCli(["prove", eventId], harness.database.url),
    );
    expect(shrunk.code).toBe(1);
    expect(shrunk.output).toMatch(
      new RegExp(
        `event ${eventId}: checkpoint #2 sealed \\d+ events after .* through .*, the log now holds more there \\(events inserted or removed\\): its checkpoint's range no longer matches \\(tampering\\)`,
      ),
    );
    expect(shrunk.output).not.toContain("not sealed");
  }, 120_000);

  it("refuses a receipt, rather than calling it not sealed, when its checkpoint's range was tampered", async () => {
    const charged = await harness.ledger.pool.query<{ request_id: string; sequence: string }>(
      `SELECT event.data->>'requestId' AS request_id, checkpoint.sequence::text AS sequence
       FROM ledger_events event JOIN ledger_checkpoints checkpoint
         ON (checkpoint.last_transaction_order, checkpoint.last_position) >= (event.transaction_order, event.position)
       WHERE event.type = 'UsageCharged' AND checkpoint.sequence > 1
       ORDER BY checkpoint.sequence, event.transaction_order DESC, event.position DESC LIMIT 1`,
    );
    const { request_id: requestId, sequence } = charged.rows[0]!;
    const refused = await afterTampering(
      harness,
      (client) => insertForgedEventInto(client, Number(sequence)),
      async (client) =>
        buildChargeReceipt(client, await readChargeEvents(client, requestId), new Date()).then(
          () => "answered",
          (error: Error) => error.message,
        ),
    );
    expect(refused).toMatch(
      new RegExp(
        `^no receipt for event .*: checkpoint #${sequence} sealed \\d+ events .*the log now holds more there`,
      ),
    );
  });

  it.each([
    [
      "an amount that is no number",
      `jsonb_set(data::jsonb, '{amountWon}', '"ten thousand"')::json`,
      "schema_version",
    ],
    ["a version no release wrote", "data", "9"],
  ])(
    "exits 1 from `ledger verify` with its findings and summary when tampering leaves an event unreadable: %s",
    async (_what, data, schemaVersion) => {
      await harness.project();
      const victim = await harness.ledger.pool.query<{
        event_id: string;
        data: string;
        schema_version: number;
      }>(
        "SELECT event_id::text, data::text, schema_version FROM ledger_events WHERE stream_id = 'account-user-유나' AND stream_version = 0",
      );
      const original = victim.rows[0]!;
      const verdict = await whileTampered(
        harness,
        async (client) => {
          await client.query(
            `UPDATE ledger_events SET data = ${data}, schema_version = ${schemaVersion} WHERE event_id = $1`,
            [original.event_id],
          );
        },
        async (client) => {
          await client.query(
            "UPDATE ledger_events SET data = $2::json, schema_version = $3 WHERE event_id = $1",
            [original.event_id, original.data, original.schema_version],
          );
        },
        () => ledgerCli(["verify"], harness.database.url),
      );
      expect(verdict.code).toBe(1);
      expect(verdict.output).toContain(
        `broken link: stream account-user-유나 version 0 (event ${original.event_id}): chain hash does not match the event`,
      );
      expect(verdict.output).toMatch(
        /verify: the projections were not compared: the log does not fold \(.+\)/,
      );
      expect(verdict.output).toContain("verify: 1 broken link in the ledger's hash chains and checkpoints");
      expect(verdict.output).not.toContain("ledger: ");
    },
    120_000,
  );

  it("prints the latest checkpoint only when it holds under the ledger signing key, else exits 1 naming why", async () => {
    const latest = await harness.ledger.pool.query<{
      sequence: string;
      checkpoint_hash: Buffer;
      signature: Buffer;
      public_key: Buffer;
    }>(
      "SELECT sequence::text, checkpoint_hash, signature, public_key FROM ledger_checkpoints ORDER BY sequence DESC LIMIT 1",
    );
    const { sequence, checkpoint_hash, signature, public_key } = latest.rows[0]!;
    const forged = await whileTampered(
      harness,
      async (client) => {
        await client.query(
          "UPDATE ledger_checkpoints SET signature = $1, public_key = $2 WHERE sequence = $3",
          [attackerKey.sign(checkpoint_hash), attackerKey.publicKey, sequence],
        );
      },
      async (client) => {
        await client.query(
          "UPDATE ledger_checkpoints SET signature = $1, public_key = $2 WHERE sequence = $3",
          [signature, public_key, sequence],
        );
      },
      () => ledgerCli(["checkpoint"], harness.database.url),
    );
    expect(forged.code).toBe(1);
    expect(forged.stdout).toBe("");
    expect(forged.output).toBe(
      `checkpoint #${sequence}: signature is not valid under the ledger signing key (forged or altered)\n` +
        `checkpoint #${sequence}: its public key ${attackerKey.publicKey.toString("hex")} is not the ledger signing key's ${signingKey.publicKey.toString("hex")}\n`,
    );
  }, 120_000);

  it("given the checkpoint before the latest removed, then `checkpoint` exits 1 saying the latest does not chain, and prints nothing to publish", async () => {
    const latest = await harness.ledger.pool.query<{ sequence: number }>(
      "SELECT sequence::integer AS sequence FROM ledger_checkpoints ORDER BY sequence DESC LIMIT 1",
    );
    const sequence = latest.rows[0]!.sequence;
    expect(sequence).toBeGreaterThan(1);
    const removed = await whileTampered(
      harness,
      async (client) => {
        await client.query(
          "CREATE TABLE removed_checkpoint AS SELECT * FROM ledger_checkpoints WHERE sequence = $1",
          [sequence - 1],
        );
        await client.query("DELETE FROM ledger_checkpoints WHERE sequence = $1", [sequence - 1]);
      },
      async (client) => {
        await client.query("INSERT INTO ledger_checkpoints SELECT * FROM removed_checkpoint");
        await client.query("DROP TABLE removed_checkpoint");
      },
      () => ledgerCli(["checkpoint"], harness.database.url),
    );
    expect(removed.code).toBe(1);
    expect(removed.stdout).toBe("");
    expect(removed.output).toBe(
      `checkpoint #${sequence}: does not chain to checkpoint #${sequence - 1} (previous hash differs)\n`,
    );
    expect((await ledgerCli(["checkpoint"], harness.database.url)).code).toBe(0);
  }, 120_000);

  it.each<[string, number, string]>([
    ["nothing", 0, "SELECT 1"],
    [
      "an event's data updated",
      1,
      `UPDATE ledger_events SET data = replace(data::text, '"amountWon":"', '"amountWon":"1')::json
       WHERE event_id = (SELECT event_id FROM ledger_events WHERE type = 'UsageCharged' ORDER BY position LIMIT 1 OFFSET 7)`,
    ],
    [
      "a stream's middle event deleted",
      1,
      `DELETE FROM ledger_events WHERE (stream_id, stream_version) = (SELECT stream_id, 1 FROM ledger_events
         WHERE stream_version = 2 ORDER BY position LIMIT 1)`,
    ],
    [
      "two events in a row deleted, and another stream's version altered",
      2,
      `DELETE FROM ledger_events WHERE stream_version IN (1, 2) AND stream_id = (SELECT stream_id FROM ledger_events
         WHERE stream_version = 3 ORDER BY position LIMIT 1);
       UPDATE ledger_events SET stream_version = stream_version + 100 WHERE event_id =
         (SELECT event_id FROM ledger_events WHERE stream_version = 0 ORDER BY position DESC LIMIT 1)`,
    ],
    [
      "a chain hash removed after a hashed event",
      1,
      `UPDATE ledger_events SET chain_hash = NULL WHERE event_id = (SELECT event_id FROM ledger_events
         WHERE stream_version = 1 ORDER BY position LIMIT 1 OFFSET 3)`,
    ],
    [
      "a stream's hashes all removed, as events written before the chain have none",
      0,
      `UPDATE ledger_events SET chain_hash = NULL WHERE stream_id = (SELECT stream_id FROM ledger_events
         WHERE stream_version = 2 ORDER BY position LIMIT 1 OFFSET 1)`,
    ],
  ])(
    "given %s, then a rebuild's check in SQL names the links verify's chain pass names, in its words",
    async (_tampering, brokenCount, tampering) => {
      const [inSql, inTypeScript] = await afterTampering(
        harness,
        (client) => client.query(tampering).then(() => {}),
        async (client) =>
          [
            await brokenChainLinks(client, 100),
            (await verifyIntegrity(client, signingKey.publicKey)).problems.filter((problem) =>
              problem.startsWith("stream "),
            ),
          ] as const,
      );
      expect(inSql.first).toEqual(inTypeScript);
      expect(inSql.brokenCount).toBe(inTypeScript.length);
      expect(inSql.brokenCount).toBe(brokenCount);
    },
  );

  it("exits 1 from `ledger verify` naming a committed tampering, 0 before it", async () => {
    await harness.project();
    const clean = await ledgerCli(["verify"], harness.database.url);
    expect(clean.output).toContain("verify: projections match the log");
    expect(clean.code).toBe(0);
    const latest = await ledgerCli(["checkpoint"], harness.database.url);
    expect(latest.code).toBe(0);
    expect(latest.output).toContain(`"publicKey": "${signingKey.publicKey.toString("hex")}"`);

    const client = await harness.ledger.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("ALTER TABLE ledger_checkpoints DISABLE TRIGGER ledger_checkpoints_immutable");
      await client.query("DELETE FROM ledger_checkpoints WHERE sequence = 1");
      await client.query("ALTER TABLE ledger_checkpoints ENABLE TRIGGER ledger_checkpoints_immutable");
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const tampered = await ledgerCli(["verify"], harness.database.url);
    expect(tampered.code).toBe(1);
    expect(tampered.output).toContain(
      "broken link: checkpoint #1 is missing (removed): checkpoint #2 follows #0",
    );
  }, 120_000);
});

async function sealingCheckpoint(harness: LedgerHarness, eventId: string): Promise<number> {
  const proof = await proveEvent(harness.ledger.pool, eventId);
  expect(proof?.checkpoint).toBeDefined();
  return proof!.checkpoint!.sequence;
}

describe("hash chains under 16 concurrent writers", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("integrity_concurrent");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  it("stay intact while writers race on shared streams and the checkpointer seals", async () => {
    const writers = 16;
    let done = false;
    const sealing = (async () => {
      const client = await harness.ledger.pool.connect();
      try {
        for (let pass = 0; pass < 10_000 && !done; pass++) {
          await sealCheckpoints(client, signingKey, { ...sealOptions, eventsMax: 50 });
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      } finally {
        client.release();
      }
    })();
    const writing = Promise.all(
      Array.from({ length: writers }, async (_, writer) => {
        for (let round = 0; round < 25; round++) {
          // Two writers at a time race on each shared stream.
          const sharedStream = (writer + round) % 8;
          const shared: StreamAppend = {
            streamId: `account-user-shared-${sharedStream}`,
            expectedVersion: "any",
            events: [topUp(`shared-${sharedStream}`, "1", `writer ${writer}`)],
          };
          const batch: StreamAppend[] = [0, 1].map((index) => ({
            streamId: `account-user-w${writer}-${index}`,
            expectedVersion: "any",
            events: [topUp(`w${writer}`, "1", `round ${round}`), topUp(`w${writer}`, "2", `round ${round}`)],
          }));
          await harness.append(shared);
          const outcomes = await harness.store.appendBatch(batch);
          expect(outcomes.every((outcome) => outcome.status === "fulfilled")).toBe(true);
        }
      }),
    ).finally(() => {
      done = true;
    });
    await writing;
    await sealing;
    await seal(harness);
    await harness.project();

    const report = await verifyIntegrity(harness.ledger.pool, signingKey.publicKey);
    expect(report.problems).toEqual([]);
    expect(report.eventCount).toBe(writers * 25 * 5);
    expect(report.unsealedEventCount).toBe(0);
    const verdict = await ledgerCli(["verify"], harness.database.url);
    expect(verdict.output).toContain("verify: projections match the log");
    expect(verdict.code).toBe(0);
  }, 120_000);
});
