import { execFile, spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../projections";
import { ledgerCommandArgs } from "./support/built-entries";
import { createTestDatabase } from "./support/database";
import { topUp } from "./support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness, projectSyntheticLedger } from "./support/ledger-harness";
import { whileTampered } from "./support/ledger-tampering";

const run = promisify(execFile);

async function ledgerCli(
  command: string | readonly string[],
  databaseUrl: string,
  environment: NodeJS.ProcessEnv = {},
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...ledgerCommandArgs, ...[command].flat()], {
      env: { ...process.env, ...environment, DATABASE_URL: databaseUrl },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

const checksumLine = /balances checksum: ([0-9a-f]{64}) \((\d+) accounts?, total ₩(-?[\d.]+)\)/;

describe("npm run ledger -- rebuild | verify", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("cli");
    const appended = await projectSyntheticLedger(harness, { eventCount: 100_000, seed: 42 });
    expect(appended).toBeGreaterThanOrEqual(100_000);
  }, 240_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("rebuilds 100,000 events to the same balances checksum and verifies clean", async () => {
    const before = await ledgerCli("verify", harness.database.url);
    expect(before.code).toBe(0);
    expect(before.output).toContain("verify: projections match the log");
    const liveChecksum = checksumLine.exec(before.output);

    const rebuilt = await ledgerCli("rebuild", harness.database.url);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.output).toMatch(
      new RegExp(`rebuilt ${allProjections.length} projections from \\d{6} events`),
    );
    const rebuiltChecksum = checksumLine.exec(rebuilt.output);
    expect(rebuiltChecksum?.[1]).toBeDefined();
    expect(rebuiltChecksum?.[1]).toBe(liveChecksum?.[1]);
    expect(Number(rebuiltChecksum?.[2])).toBeGreaterThan(100);

    const after = await ledgerCli("verify", harness.database.url);
    expect(after.code).toBe(0);
    expect(checksumLine.exec(after.output)?.[1]).toBe(liveChecksum?.[1]);
  }, 240_000);

  it("answers `checkpoint` before the first one is sealed with 3, not yet, and not 1, found", async () => {
    const verdict = await ledgerCli("checkpoint", harness.database.url);
    expect(verdict).toEqual({
      code: 3,
      output: "no checkpoint yet: ask again after the first one is sealed\n",
    });
  }, 60_000);

  it("names a corrupted projection row and exits 1", async () => {
    const victim = await harness.ledger.pool.query<{ account_kind: string; account_id: string }>(
      "SELECT account_kind, account_id FROM projection_balances ORDER BY account_id LIMIT 1",
    );
    const { account_kind, account_id } = victim.rows[0]!;
    await harness.ledger.pool.query(
      "UPDATE projection_balances SET balance_won = balance_won + 0.000001 WHERE account_kind = $1 AND account_id = $2",
      [account_kind, account_id],
    );
    await harness.ledger.pool.query(
      "DELETE FROM projection_billing_history WHERE request_id = (SELECT min(request_id) FROM projection_billing_history)",
    );

    const verdict = await ledgerCli("verify", harness.database.url);

    expect(verdict.code).toBe(1);
    expect(verdict.output).toContain(
      `balances projection_balances ["${account_kind}","${account_id}"]: balance_won is`,
    );
    expect(verdict.output).toMatch(
      /billing-history projection_billing_history \["[^"]+"\]: row missing from the projection/,
    );
    expect(verdict.output).toContain("verify: 2 differences");
  }, 120_000);

  it.each([
    [
      "a newer release folded are that release's to verify",
      1,
      "folded by a newer release's definitions: verify with that release, or, to go back to this one, rebuild them with it (npm run ledger -- rebuild)",
    ],
    [
      "an earlier release folded are not this release's to compare",
      -1,
      "not folded by this release's definitions: start this release's worker on the database first (it refolds them)",
    ],
  ])(
    "says projections %s, exit 2, and changes nothing",
    async (_whose, versionsAhead, said) => {
      const moveVersion = (by: number) =>
        harness.ledger.pool.query(
          "UPDATE projection_checkpoints SET definition_version = definition_version + $1 WHERE projection = 'prices'",
          [by],
        );
      await moveVersion(versionsAhead);
      try {
        const verdict = await ledgerCli("verify", harness.database.url);

        expect(verdict.code).toBe(2);
        expect(verdict.output.trim()).toBe(
          `ledger: the projections prices are ${said}; this command changes nothing`,
        );
      } finally {
        await moveVersion(-versionsAhead);
      }
    },
    120_000,
  );
});

describe("npm run ledger -- rebuild, given a log whose hash chains do not hold", () => {
  let harness: LedgerHarness;
  const forged = { event_id: "", stream_id: "" };
  const projectionsOf = (harness: LedgerHarness) =>
    harness.ledger.pool.query(
      "SELECT account_kind, account_id, balance_won, topped_up_won FROM projection_balances ORDER BY 1, 2",
    );

  beforeAll(async () => {
    harness = await openLedgerHarness("cli_broken_chains");
    await projectSyntheticLedger(harness, { eventCount: 2_000, seed: 5 });
    await harness.append({
      streamId: "account-user-forger",
      expectedVersion: "no-stream",
      events: [topUp("forger", "10", "honest"), topUp("forger", "20", "honest too")],
    });
    await harness.project();
    const victim = await harness.ledger.pool.query<typeof forged>(
      "SELECT event_id::text, stream_id FROM ledger_events WHERE stream_id = 'account-user-forger' AND stream_version = 0",
    );
    Object.assign(forged, victim.rows[0]);
  }, 120_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given the reader of its output gone (`| head`), then verify ends by its verdict, with no EPIPE stack on stderr", async () => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href,
        fileURLToPath(new URL("../src/ledger-cli.ts", import.meta.url)),
        "verify",
      ],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, DATABASE_URL: harness.database.url } },
    );
    // As `head` does once it has what it wants: the pipe's reading end closed while the command still writes.
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));

    expect(stderr).toBe("");
    expect(code).toBe(0);
  }, 120_000);

  it("given a top-up's amount altered in the log, then it refuses (exit 1) naming the event, and the projections are as they were", async () => {
    const before = await projectionsOf(harness);
    const verdict = await whileTampered(
      harness,
      async (client) => {
        await client.query(
          `UPDATE ledger_events SET data = replace(data::text, '"amountWon":"10"', '"amountWon":"1000000"')::json WHERE event_id = $1`,
          [forged.event_id],
        );
      },
      async (client) => {
        await client.query(
          `UPDATE ledger_events SET data = replace(data::text, '"amountWon":"1000000"', '"amountWon":"10"')::json WHERE event_id = $1`,
          [forged.event_id],
        );
      },
      async () => {
        const refused = await ledgerCli("rebuild", harness.database.url);
        return { refused, after: await projectionsOf(harness) };
      },
    );

    expect(verdict.refused.code).toBe(1);
    expect(verdict.refused.output).toContain(
      `broken link: stream account-user-forger version 0 (event ${forged.event_id}): chain hash does not match the event (its contents, version or predecessor were changed)\n`,
    );
    expect(verdict.refused.output).toContain(
      "rebuild: refused, the projections are as they were: the hash chains of 1 stream do not hold",
    );
    expect(verdict.refused.output).not.toContain("rebuilt");
    expect(verdict.after.rows).toEqual(before.rows);
  }, 120_000);

  it("given --despite-broken-chains, then it folds the log as it stands, saying what it found, exit 0", async () => {
    const folded = await whileTampered(
      harness,
      async (client) => {
        await client.query("CREATE TABLE deleted_event AS SELECT * FROM ledger_events WHERE event_id = $1", [
          forged.event_id,
        ]);
        await client.query("DELETE FROM ledger_events WHERE event_id = $1", [forged.event_id]);
      },
      async (client) => {
        await client.query("INSERT INTO ledger_events OVERRIDING SYSTEM VALUE SELECT * FROM deleted_event");
        await client.query("DROP TABLE deleted_event");
      },
      async () => {
        const refused = await ledgerCli("rebuild", harness.database.url);
        const despite = await ledgerCli(["rebuild", "--despite-broken-chains"], harness.database.url);
        const balance = await harness.ledger.pool.query<{ topped_up_won: string }>(
          "SELECT topped_up_won FROM projection_balances WHERE account_kind = 'user' AND account_id = 'forger'",
        );
        return { refused, despite, toppedUpWon: balance.rows[0]?.topped_up_won };
      },
    );

    expect(folded.refused.code).toBe(1);
    expect(folded.refused.output).toMatch(
      /^broken link: stream account-user-forger version 1 \(event [0-9a-f-]{36}\): version 0 is missing from the stream \(deleted\)$/m,
    );
    expect(folded.despite.code).toBe(0);
    expect(folded.despite.output).toContain("version 0 is missing from the stream (deleted)");
    expect(folded.despite.output).toContain(
      "rebuild: folded as it stands, as told: the hash chains of 1 stream do not hold",
    );
    expect(folded.despite.output).toMatch(/rebuilt \d+ projections from \d+ events/);
    expect(folded.toppedUpWon).toBe("20");
  }, 120_000);
});

describe("npm run ledger -- against a database that holds no ledger", () => {
  it.each(["verify", "rebuild", "checkpoint"])(
    "%s refuses it, exit 2, naming it, and creates nothing in it",
    async (command) => {
      const empty = await createTestDatabase("cli_no_ledger");
      try {
        const verdict = await ledgerCli(command, empty.url);

        expect(verdict.code).toBe(2);
        expect(verdict.output.trim()).toBe(
          `ledger: the database ${empty.name} at ${new URL(empty.url).hostname}:${new URL(empty.url).port || "5432"} holds no ledger: start this release's service on it first (it migrates the schema); this command changes nothing`,
        );
        const client = new pg.Client({ connectionString: empty.url });
        await client.connect();
        const tables = await client.query("SELECT 1 FROM pg_tables WHERE schemaname = 'public'");
        await client.end();
        expect(tables.rowCount).toBe(0);
      } finally {
        await empty.drop();
      }
    },
    60_000,
  );
});

describe("npm run ledger -- without DATABASE_URL, in a checkout with no embedded setup", () => {
  it.each(["verify", "checkpoint", "rebuild"])(
    "%s says there is no ledger to read, exits 2, and creates no embedded setup",
    async (command) => {
      const checkout = await mkdtemp(join(tmpdir(), "ledger-cli-no-setup-"));
      try {
        const environment: NodeJS.ProcessEnv = { ...process.env };
        delete environment.DATABASE_URL;
        // tsx by its path: the checkout has no node_modules to find it in.
        const verdict = await run(
          process.execPath,
          [
            "--import",
            new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href,
            fileURLToPath(new URL("../src/ledger-cli.ts", import.meta.url)),
            command,
          ],
          {
            cwd: checkout,
            env: environment,
          },
        ).then(
          ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
          (error: { code: number; stdout: string; stderr: string }) => ({
            code: error.code,
            output: error.stdout + error.stderr,
          }),
        );

        expect(verdict).toEqual({
          code: 2,
          output: `ledger: no DATABASE_URL, and no embedded setup in ${join(checkout, ".data")} to read: set DATABASE_URL, or start the service here first (npm start); this command changes nothing\n`,
        });
        expect(await readdir(checkout)).toEqual([]);
      } finally {
        await rm(checkout, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

describe("npm run ledger -- when the check cannot run", () => {
  it.each(["verify", "checkpoint"])(
    "%s against a database it cannot reach says so in one line and exits 2, not 1 (1 is what a check found)",
    async (command) => {
      const verdict = await ledgerCli(command, "postgres://postgres@127.0.0.1:1/nothing");
      expect(verdict.code).toBe(2);
      expect(verdict.output.trim()).toBe(
        "ledger: cannot connect to the database nothing at 127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1; this command changes nothing",
      );
    },
    60_000,
  );

  it.each([
    [
      "asks for a password DATABASE_URL does not give",
      "postgres://postgres@127.0.0.1:PORT/ledger",
      "ledger: the database ledger at 127.0.0.1:PORT asks for a password, and DATABASE_URL gives none; this command changes nothing",
    ],
    [
      "refuses the password DATABASE_URL gives",
      "postgres://postgres:wrong@127.0.0.1:PORT/ledger",
      'ledger: cannot connect to the database ledger at 127.0.0.1:PORT: password authentication failed for user "postgres"; this command changes nothing',
    ],
  ])(
    "given a server that %s, then verify says so in one line naming the database, exit 2",
    async (_case, databaseUrl, said) => {
      const server = await passwordAskingServer();
      try {
        const port = String(server.port);
        const verdict = await ledgerCli("verify", databaseUrl.replace("PORT", port));
        expect(verdict).toEqual({ code: 2, output: `${said.replace("PORT", port)}\n` });
      } finally {
        await server.close();
      }
    },
    60_000,
  );

  it("checks only the variables the command reads: a service's PORT=abc does not stop it, a bad DATABASE_URL does", async () => {
    const unrelated = await ledgerCli("verify", "postgres://postgres@127.0.0.1:1/nothing", {
      PORT: "abc",
      METRICS_PORT: "-1",
    });
    expect(unrelated.output.trim()).toMatch(
      /: connect ECONNREFUSED 127\.0\.0\.1:1; this command changes nothing$/,
    );
    const read = await ledgerCli("verify", "mysql://127.0.0.1:1/nothing");
    expect(read.code).toBe(2);
    expect(read.output.trim()).toMatch(
      /^invalid configuration: DATABASE_URL must be a URL starting with postgres:\/\//,
    );
  }, 60_000);
});

/**
 * PostgreSQL's side of a sign-in that asks for a password (SCRAM-SHA-256), as far as a client gets with
 * none or the wrong one: a client without a password stops at the server's first SCRAM message; one that
 * proves any is refused as PostgreSQL refuses a wrong one (28P01). The shared test server trusts every
 * sign-in, so it cannot play this part.
 */
async function passwordAskingServer(): Promise<{ port: number; close(): Promise<void> }> {
  const message = (type: string, body: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeInt32BE(body.length + 4);
    return Buffer.concat([Buffer.from(type), length, body]);
  };
  const askForScram = Buffer.alloc(4);
  askForScram.writeInt32BE(10);
  const scram = (code: number, text: string) => {
    const head = Buffer.alloc(4);
    head.writeInt32BE(code);
    return message("R", Buffer.concat([head, Buffer.from(text)]));
  };
  const server = createServer((socket) => {
    let messagesSeen = 0;
    socket.on("data", (chunk) => {
      messagesSeen += 1;
      // The start-up message: SCRAM-SHA-256 asked for.
      if (messagesSeen === 1) return void socket.write(scram(10, "SCRAM-SHA-256\0\0"));
      // The client's first SCRAM message: the server's, extending its nonce (where a client with no password stops).
      const clientNonce = /r=([^,\0]+)/.exec(chunk.toString("latin1"))?.[1];
      if (messagesSeen === 2 && clientNonce)
        return void socket.write(
          scram(11, `r=${clientNonce}server,s=${Buffer.from("salt").toString("base64")},i=4096`),
        );
      // The client's proof: refused, as PostgreSQL refuses a wrong password.
      const fields = ["SFATAL", "C28P01", 'Mpassword authentication failed for user "postgres"'];
      socket.end(message("E", Buffer.from(`${fields.join("\0")}\0\0`)));
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
