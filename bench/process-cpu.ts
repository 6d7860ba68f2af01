import { readFileSync } from "node:fs";
import type pg from "pg";

/**
 * CPU time of processes, read from /proc (Linux): what a request costs each kind of process (gateway,
 * worker, PostgreSQL backends), beside what the floor's processes spend on the same load. Each pid's
 * user + system time, in clock ticks of 10 ms (CLK_TCK is 100 on Linux); a process gone meanwhile counts 0.
 */

const msPerTick = 10;

export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: the fields start after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * msPerTick;
  } catch {
    return 0;
  }
}

/**
 * The PostgreSQL backends of the monitor's database (the benchmark's own), but the monitor's: those whose
 * sessions carry one of `applicationNames` (`only`), or every other one (`except`).
 */
export async function backendPidsOf(
  monitor: pg.Client,
  applicationNames: { only: readonly string[] } | { except: readonly string[] },
): Promise<number[]> {
  const only = "only" in applicationNames;
  const result = await monitor.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
       AND (application_name = ANY($1)) = $2`,
    [only ? applicationNames.only : applicationNames.except, only],
  );
  return result.rows.map((row) => row.pid);
}

export type ProcessKinds<Kind extends string> = Record<Kind, () => Promise<readonly number[]>>;

/**
 * The backends of the monitor's database but `except`'s, one kind per application name connected now
 * (`${prefix}: ${name}`), so that a breakdown says whose statements the server's CPU went to; a backend of a
 * name that connects later counts under `${prefix}: other`.
 */
export async function backendKindsByApplication(
  monitor: pg.Client,
  prefix: string,
  except: readonly string[],
): Promise<ProcessKinds<string>> {
  const result = await monitor.query<{ name: string }>(
    `SELECT DISTINCT application_name AS name FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
       AND NOT (application_name = ANY($1))
     ORDER BY 1`,
    [except],
  );
  const names = result.rows.map((row) => row.name);
  return {
    ...Object.fromEntries(
      names.map((name) => [`${prefix}: ${name}`, () => backendPidsOf(monitor, { only: [name] })]),
    ),
    [`${prefix}: other`]: () => backendPidsOf(monitor, { except: [...except, ...names] }),
  };
}

/** CPU ms each kind of process spent while `work` ran (pids looked up before and after, and summed). */
export async function cpuDuring<Kind extends string, T>(
  kinds: ProcessKinds<Kind>,
  work: () => Promise<T>,
): Promise<{ result: T; cpuMs: Record<Kind, number> }> {
  const names = Object.keys(kinds) as Kind[];
  const pidsBefore = await Promise.all(names.map((name) => kinds[name]()));
  const before = pidsBefore.map((pids) => new Map(pids.map((pid) => [pid, cpuMsOf(pid)])));
  const result = await work();
  const pidsAfter = await Promise.all(names.map((name) => kinds[name]()));
  const cpuMs = {} as Record<Kind, number>;
  names.forEach((name, index) => {
    const pids = new Set([...pidsBefore[index]!, ...pidsAfter[index]!]);
    let total = 0;
    // A pid gone meanwhile (a pool's idle connection closed) reads 0: it counts nothing, not minus its life.
    for (const pid of pids) total += Math.max(0, cpuMsOf(pid) - (before[index]!.get(pid) ?? 0));
    cpuMs[name] = total;
  });
  return { result, cpuMs };
}
