import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealCheckpoints } from "../src/ledger/integrity/ledger-checkpointer";
import { LedgerSigningKey } from "../src/ledger/integrity/ledger-signing-key";
import { ledgerCommandArgs } from "./support/built-entries";
import { topUp } from "./support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "./support/ledger-harness";

/**
 * `npm run ledger` with EVENTSTORE_URL: the log is EventStoreDB's, while checkpoints, proofs and the hash
 * chains `verify` checks live in PostgreSQL's tables. Given a database whose own PostgreSQL log is sealed
 * (what a command reading the wrong log would find and answer for), no EventStoreDB server is needed: a
 * command that cannot answer for the EventStoreDB log refuses before it reads one.
 */

const run = promisify(execFile);
const signingKeyText = Buffer.alloc(32, 21).toString("base64");

let harness: LedgerHarness;
let eventStoreUrl: string;
let sealedEventId: string;

async function ledgerCli(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...ledgerCommandArgs, ...args], {
      env: {
        ...process.env,
        DATABASE_URL: harness.database.url,
        EVENTSTORE_URL: eventStoreUrl,
        LEDGER_SIGNING_KEY: signingKeyText,
      },
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

beforeAll(async () => {
  harness = await openLedgerHarness("cli_esdb");
  const sealed = topUp("esdb-cli", "100", "sealed");
  sealedEventId = sealed.eventId;
  await harness.append({ streamId: "account-user-esdb-cli", expectedVersion: "no-stream", events: [sealed] });
  await harness.project();
  await harness.visible();
  const client = await harness.ledger.pool.connect();
  try {
    await sealCheckpoints(client, LedgerSigningKey.parse(signingKeyText), {
      eventsMax: 1_000,
      intervalMs: 0,
      checkpointsMax: 1,
      sealPartial: true,
    });
  } finally {
    client.release();
  }
  // A port just closed: an EventStoreDB nobody can reach, so no command can have read it.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  eventStoreUrl = `esdb://127.0.0.1:${port}?tls=false`;
}, 60_000);

afterAll(async () => {
  await harness?.dispose();
});

describe("npm run ledger -- with EVENTSTORE_URL", () => {
  it.each([
    ["checkpoint", () => ["checkpoint"]],
    ["prove by event id", () => ["prove", sealedEventId]],
    ["prove by position", () => ["prove", "1-1"]],
  ])(
    "given PostgreSQL's own log sealed, when %s, then it refuses (exit 2): checkpoints seal the PostgreSQL store only",
    async (_case, args) => {
      const verdict = await ledgerCli(...args());

      expect(verdict).toEqual({
        code: 2,
        output: `ledger: ${args()[0]} answers for the PostgreSQL event store only: EventStoreDB's log (EVENTSTORE_URL) is neither chained into checkpoints nor sealed; this command changes nothing\n`,
      });
    },
    60_000,
  );

  it("when verify, then it says before reading the log that it checks no hash chain or checkpoint there", async () => {
    const verdict = await ledgerCli("verify");

    expect(verdict.output).toMatch(
      /^verify: the EventStoreDB log's hash chains and checkpoints are not checked \(that is done on the PostgreSQL store only\); only the projections are compared with it\n/,
    );
    // Nothing listens at EVENTSTORE_URL: the comparison could not run.
    expect(verdict.code).toBe(2);
  }, 60_000);
});
