import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { connect, createServer, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { type AdvisoryLockLeaderOptions, contendForLead } from "../../src/database/advisory-lock-leader";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { eventually } from "../workers/queue-test-support";

/**
 * The leader primitive on a real PostgreSQL: of several contenders exactly one leads; when its session dies
 * (terminated, or silent) or its process freezes, its term ends and another takes over; stopping ends the
 * session and frees the lock.
 */

let database: TestDatabase;
let admin: pg.Client;
const lockKey = advisoryLockKeys.ledgerCheckpointer;

/** Within this of the leader's session ending, another leads (stand-bys retry every 100 ms here). */
const takeoverBoundMs = 5_000;

beforeAll(async () => {
  database = await createTestDatabase("advisory_lock_leader");
  admin = new pg.Client({ connectionString: inject("postgresServerUrl") });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

interface Contender {
  terms: number;
  leading: boolean;
  failures: unknown[];
  recoveries: number;
  stop(): Promise<void>;
}

/** A process contending for `lockKey`; its lead holds the term until it ends, unless `lead` is given. */
function contender(name: string, overrides: Partial<AdvisoryLockLeaderOptions> = {}): Contender {
  const stopping = new AbortController();
  const state: Contender = { terms: 0, leading: false, failures: [], recoveries: 0, stop: async () => {} };
  const running = contendForLead(
    {
      connectionString: database.url,
      lockKey,
      applicationName: `contender-${name}`,
      standbyRetryMs: 100,
      queryTimeoutMs: 1_000,
      lead: async (_session, term) => {
        state.terms += 1;
        state.leading = true;
        await untilAborted(term);
        state.leading = false;
      },
      onFailing: (error) => state.failures.push(error),
      onRecovered: () => {
        state.recoveries += 1;
      },
      ...overrides,
    },
    stopping.signal,
  );
  state.stop = async () => {
    stopping.abort();
    await running;
  };
  return state;
}

/** The application names of the sessions holding `lockKey` in the test's database. */
async function lockHolders(): Promise<string[]> {
  const result = await admin.query<{ application_name: string }>(
    `SELECT activity.application_name FROM pg_locks held JOIN pg_stat_activity activity USING (pid)
     WHERE held.locktype = 'advisory' AND held.granted AND held.classid = 0 AND held.objid = $1
       AND held.database = (SELECT oid FROM pg_database WHERE datname = $2)`,
    [lockKey, database.name],
  );
  return result.rows.map((row) => row.application_name);
}

/**
 * When `applicationName`'s session holding the lock last went idle (its last statement's end), in ms by the
 * server's clock.
 */
async function lockHolderIdleSinceMs(applicationName: string): Promise<number> {
  for (;;) {
    const result = await admin.query<{ state: string; idle_since_ms: number }>(
      `SELECT activity.state, extract(epoch FROM activity.state_change)::float8 * 1000 AS idle_since_ms
       FROM pg_locks held JOIN pg_stat_activity activity USING (pid)
       WHERE held.locktype = 'advisory' AND held.granted AND held.classid = 0 AND held.objid = $1
         AND held.database = (SELECT oid FROM pg_database WHERE datname = $2) AND activity.application_name = $3`,
      [lockKey, database.name, applicationName],
    );
    const [holder] = result.rows;
    assert(holder, `${applicationName} holds no lock`);
    // A statement sent just before the stop still runs to its end: its end is the session's last activity.
    if (holder.state !== "active") return holder.idle_since_ms;
    await sleep(10);
  }
}

async function serverNowMs(): Promise<number> {
  const result = await admin.query<{ now_ms: number }>(
    "SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS now_ms",
  );
  return result.rows[0]!.now_ms;
}

async function sessionsNamed(applicationName: string): Promise<number> {
  const result = await admin.query<{ count: number }>(
    "SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
    [database.name, applicationName],
  );
  return result.rows[0]!.count;
}

describe("advisory lock leader", () => {
  it("lets exactly one of two contenders lead", async () => {
    // Given: two contenders started together
    const first = contender("one");
    const second = contender("two");
    try {
      // When: they contend for several retry intervals
      await eventually("one leads", async () => first.leading || second.leading, takeoverBoundMs);
      await sleep(500);

      // Then: one term in all, and its session is the only holder of the lock
      expect(first.terms + second.terms).toBe(1);
      const leader = first.leading ? "contender-one" : "contender-two";
      expect(await lockHolders()).toEqual([leader]);
      expect([...first.failures, ...second.failures]).toEqual([]);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it("ends the term of a leader whose session is terminated, and another takes over", async () => {
    // Given: a leader that, once deposed, does not retry within the test (as a killed process would not)
    const first = contender("first", { standbyRetryMs: 600_000 });
    await eventually("the first leads", async () => first.leading, takeoverBoundMs);
    const second = contender("second");
    try {
      await sleep(300);
      expect(second.leading).toBe(false);

      // When: the leader's backend is terminated
      const terminated = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
        [database.name, "contender-first"],
      );
      expect(terminated.rows).toHaveLength(1);

      // Then: its term ends, the loss is reported once, and the other leads within the bound
      await eventually("the first's term ends", async () => !first.leading, takeoverBoundMs);
      await eventually("the second leads", async () => second.leading, takeoverBoundMs);
      expect(first.failures).toHaveLength(1);
      expect(String(first.failures[0])).toMatch(/terminat/);
      expect(await lockHolders()).toEqual(["contender-second"]);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it("on abort, lets the lead finish on its session, then ends the session and frees the lock", async () => {
    // Given: a leader whose lead still uses the session after its term ends
    let finishedOnSession = false;
    const leader = contender("stopping", {
      lead: async (session, term) => {
        leader.leading = true;
        await untilAborted(term);
        await session.query("SELECT 1");
        finishedOnSession = true;
      },
    });
    await eventually("it leads", async () => leader.leading, takeoverBoundMs);
    expect(await lockHolders()).toEqual(["contender-stopping"]);

    // When: the process stops
    await leader.stop();

    // Then: the lead finished, the session is gone and the lock is free
    expect(finishedOnSession).toBe(true);
    expect(await sessionsNamed("contender-stopping")).toBe(0);
    expect(await lockHolders()).toEqual([]);
  });

  it("reports a lead that keeps failing once, not per retry, and its recovery once", async () => {
    // Given: a lead that throws at once, every term
    let broken = true;
    let attempts = 0;
    const leader = contender("failing", {
      standbyRetryMs: 50,
      lead: async (_session, term) => {
        attempts += 1;
        if (broken) throw new Error("the lead is broken");
        await untilAborted(term);
      },
    });
    try {
      // When: it is retried several times
      await eventually("several attempts", async () => attempts >= 5, takeoverBoundMs);

      // Then: one failure reported
      expect(leader.failures).toHaveLength(1);
      expect(String(leader.failures[0])).toMatch(/the lead is broken/);
      expect(leader.recoveries).toBe(0);

      // When: the lead works again and a term lasts
      broken = false;
      await eventually("it recovered", async () => leader.recoveries > 0, takeoverBoundMs);
      await sleep(300);

      // Then: one recovery, no new failure
      expect(leader.recoveries).toBe(1);
      expect(leader.failures).toHaveLength(1);
    } finally {
      await leader.stop();
    }
  });

  it("ends the term of a leader whose connection goes silent (the liveness check)", async () => {
    // Given: a leader connected through a relay that can stop forwarding without closing anything
    const relay = await startFreezableRelay(database.url);
    const silent = contender("silent", { connectionString: relay.url, queryTimeoutMs: 300 });
    try {
      await eventually("it leads", async () => silent.leading, takeoverBoundMs);

      // When: the connection goes silent (no error, no end: a dead host or a cut cable)
      relay.freeze();

      // Then: the liveness check (every 100 ms, answered within 600 ms here) ends the term
      await eventually("the term ends", async () => !silent.leading, 3_000);

      // When: the server notices too (here: the relay drops the connection), the loss is reported (once the
      // session that would not answer its goodbye is gone) and another leads
      await relay.close();
      await eventually("the loss is reported", async () => silent.failures.length > 0, takeoverBoundMs);
      expect(String(silent.failures[0])).toMatch(/timeout/i);
      const successor = contender("successor");
      try {
        await eventually("the successor leads", async () => successor!.leading, takeoverBoundMs);
      } finally {
        await successor.stop();
      }
    } finally {
      await relay.close();
      await silent.stop();
    }
  }, 30_000);

  it("keeps a living leader's session beyond its idle bound, with unbounded statements longer than it", async () => {
    // Given: a leader whose statements are unbounded (as the projection runner's), its session ended by the
    // server after 1 s idle (touched every 100 ms: a stall of this process shorter than 900 ms loses nothing),
    // whose lead runs a statement of 2.5 s inside a transaction, then waits
    let longStatementDone = false;
    let terms = 0;
    const leader = contender("unbounded", {
      queryTimeoutMs: "unbounded",
      sessionIdleMaxMs: 1_000,
      lead: async (session, term) => {
        terms += 1;
        leader.leading = true;
        await session.query("BEGIN");
        await session.query("SELECT pg_sleep(2.5)");
        await session.query("COMMIT");
        longStatementDone = true;
        await untilAborted(term);
        leader.leading = false;
      },
    });
    try {
      // When: it leads for five times its idle bound
      await eventually("it leads", async () => leader.leading, takeoverBoundMs);
      await sleep(5_000);

      // Then: its statement ran to its end, and the same session still holds the lock, nothing lost
      expect(longStatementDone).toBe(true);
      expect(leader.leading).toBe(true);
      expect(terms).toBe(1);
      expect(await lockHolders()).toEqual(["contender-unbounded"]);
      expect(leader.failures).toEqual([]);
    } finally {
      await leader.stop();
    }
  });

  it.each(["idle", "in-transaction"] as const)(
    "frees the lock of a frozen leader (SIGSTOP, session %s) within its idle bound, and the thawed leader's term ends",
    async (mode) => {
      // Given: a leader in a process of its own, whose session the server ends after 1 s idle
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "test/database/support/leading-process.ts", database.url, mode],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      child.stdout.on("data", (chunk) => {
        output += String(chunk);
      });
      child.stderr.on("data", (chunk) => {
        output += String(chunk);
      });
      let successor: Contender | undefined;
      try {
        await eventually("the process leads", async () => output.includes("leading"), 30_000);
        successor = contender("successor");
        await sleep(1_500);
        // Touched more often than its idle bound, the living leader's session lasts beyond it.
        expect(await lockHolders()).toEqual(["contender-frozen"]);
        expect(successor.leading).toBe(false);

        // When: the process freezes, its socket open, answering nothing
        child.kill("SIGSTOP");
        const lastTouchedAtMs = await lockHolderIdleSinceMs("contender-frozen");

        // Then: the server ends the session idle since its last touch and the stand-by leads, within the bound
        // and a retry or two — and not before the bound (counted from that touch, not from the freeze: a
        // process starved of CPU may have touched it last well before it was stopped)
        await eventually("the successor leads", async () => successor!.leading, takeoverBoundMs);
        expect((await serverNowMs()) - lastTouchedAtMs).toBeGreaterThanOrEqual(900);
        expect(await lockHolders()).toEqual(["contender-successor"]);

        // When: it thaws, its session is gone: its term ends and the loss is reported
        child.kill("SIGCONT");
        await eventually("the thawed term ends", async () => output.includes("term ended"), takeoverBoundMs);
        await eventually("the loss is reported", async () => output.includes("lost:"), takeoverBoundMs);
        expect(output).toMatch(/lost: .*(idle|terminat)/i);
        expect(await lockHolders()).toEqual(["contender-successor"]);
      } finally {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
        await successor?.stop();
      }
    },
    45_000,
  );

  it("gives every use of an advisory lock its own key", () => {
    const keys = Object.values(advisoryLockKeys);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

/** A TCP relay to the test server whose `freeze()` drops every byte from then on, closing nothing. */
async function startFreezableRelay(databaseUrl: string): Promise<{
  url: string;
  freeze(): void;
  close(): Promise<void>;
}> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let frozen = false;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on("data", (chunk) => {
        if (!frozen) to.write(chunk);
      });
      from.on("error", () => {});
      from.on("close", () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as { port: number }).port);
  let closing: Promise<void> | undefined;
  return {
    url: url.toString(),
    freeze: () => {
      frozen = true;
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      });
      return closing;
    },
  };
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}
