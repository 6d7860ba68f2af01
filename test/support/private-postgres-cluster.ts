import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { findFreePort } from "../../src/database/embedded-postgres";

const run = promisify(execFile);

/**
 * A PostgreSQL 15 cluster of the test's own (Debian's `pg_createcluster`, trust auth, a free port), for
 * tests that stop, restart or crash the server itself: the shared server is never touched. The cluster is
 * dropped, whatever state it is in, by `drop`.
 */
export interface PrivatePostgresCluster {
  name: string;
  /** The cluster's `postgres` database, as the service's `DATABASE_URL`. */
  url: string;
  /** `pg_ctlcluster restart -m fast`: backends are told to end, the server shuts down cleanly and starts. */
  restartFast(): Promise<void>;
  /**
   * A crash: SIGKILL to the postmaster and at once to every process it had started (its backends, WAL
   * writer…), as when the host's database server dies: WAL not yet written out is lost with them. Started
   * again after `downMs`, the server runs crash recovery.
   */
  killServerAndStart(downMs: number): Promise<void>;
  /**
   * SIGKILL to the postmaster alone: its backends notice and end themselves (a commit under way may still
   * finish). Started again after `downMs`, once they have, the server runs crash recovery.
   */
  killPostmasterAndStart(downMs: number): Promise<void>;
  /**
   * SIGSTOP to the postmaster and every process it started, as a host that froze (or a network that drops
   * every packet): connections stay open, statements are taken and never answered, new connections wait.
   * Resolves to the thaw (SIGCONT to each).
   */
  freeze(): Promise<() => void>;
  drop(): Promise<void>;
}

const version = "15";

export async function createPrivatePostgresCluster(label: string): Promise<PrivatePostgresCluster> {
  const name = `${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(3).toString("hex")}`;
  const port = await findFreePort();
  await run("pg_createcluster", [version, name, "--port", String(port), "--", "--auth=trust"]);
  const control = (...args: string[]) =>
    run("pg_ctlcluster", ["--skip-systemctl-redirect", version, name, ...args]);
  try {
    await control("start");
  } catch (error) {
    // The port found free taken meanwhile, say: leave no cluster behind.
    await run("pg_dropcluster", [version, name]).catch(() => {});
    throw error;
  }
  const dataDirectory = `/var/lib/postgresql/${version}/${name}`;
  const postmasterPidOf = async () =>
    Number((await readFile(`${dataDirectory}/postmaster.pid`, "utf8")).split("\n")[0]);
  const crashAndStart = async (crash: { killChildren: boolean; downMs: number }) => {
    const postmasterPid = await postmasterPidOf();
    const children = await childrenOf(postmasterPid);
    process.kill(postmasterPid, "SIGKILL");
    if (crash.killChildren) for (const pid of children) killQuietly(pid);
    // A backend left alive would keep the old shared memory, and the new postmaster would refuse to start.
    await untilGone([postmasterPid, ...children], 15_000);
    await new Promise((resolve) => setTimeout(resolve, crash.downMs));
    await control("start");
  };

  return {
    name,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async restartFast() {
      await control("restart", "-m", "fast");
    },
    killServerAndStart: (downMs) => crashAndStart({ killChildren: true, downMs }),
    killPostmasterAndStart: (downMs) => crashAndStart({ killChildren: false, downMs }),
    async freeze() {
      const postmasterPid = await postmasterPidOf();
      const frozen = [postmasterPid, ...(await childrenOf(postmasterPid))];
      for (const pid of frozen) process.kill(pid, "SIGSTOP");
      return () => {
        for (const pid of frozen) process.kill(pid, "SIGCONT");
      };
    },
    async drop() {
      await run("pg_dropcluster", [version, name, "--stop"]).catch(async () => {
        // A cluster that does not stop cleanly (a half-finished crash) is stopped outright first.
        await control("stop", "-m", "immediate").catch(() => {});
        await run("pg_dropcluster", [version, name, "--stop"]);
      });
    },
  };
}

/** The processes whose parent is `pid` (from /proc: PostgreSQL's processes are named `postgres`). */
async function childrenOf(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // The command name is in parentheses and may hold spaces: the parent's pid is the 2nd field after it.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[1]) === pid) children.push(Number(entry));
  }
  return children;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}

async function untilGone(pids: readonly number[], waitMs: number): Promise<void> {
  const deadlineMs = Date.now() + waitMs;
  for (;;) {
    const alive: number[] = [];
    for (const pid of pids) if (await isRunning(pid)) alive.push(pid);
    if (alive.length === 0) return;
    if (Date.now() > deadlineMs) throw new Error(`processes ${alive.join(", ")} outlived SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Until its /proc entry is gone: a zombie still counts, since the new postmaster refuses to start while the
 * pid in the old socket lock file answers a signal (the process that adopted it reaps it soon enough).
 */
async function isRunning(pid: number): Promise<boolean> {
  return (await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined)) !== undefined;
}
