import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createPool } from "../../src/database/pool";

const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const pool = createPool({ url, connectionsMax: 2, applicationName: "pool-lost-connection-test" });
const killer = new pg.Pool({ connectionString: url, max: 1 });

afterAll(async () => {
  await pool.end();
  await killer.end();
});

describe("a pooled connection lost while checked out", () => {
  it("given a client between two statements of its work, when its backend ends, then the next statement fails, the pool discards it, and the process lives", async () => {
    // Given: a client checked out, idle between statements (a transaction's JavaScript step, say)
    const client = await pool.connect();
    const backend = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const ended = new Promise<void>((resolve) => client.once("end", () => resolve()));

    // When: the server ends its backend (a restart, an operator's pg_terminate_backend, a cut network)
    await killer.query("SELECT pg_terminate_backend($1)", [backend]);
    await ended;
    // An 'error' event nobody listens to is thrown from the socket's callback, which ends the process (vitest
    // reports it as an unhandled error): give it the turn it would be thrown in.
    await new Promise((resolve) => setImmediate(resolve));

    // Then: the work's next statement fails, and the pool replaces the client
    await expect(client.query("SELECT 1")).rejects.toThrow();
    client.release();
    expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    const connected = await pool.connect();
    try {
      expect(connected).not.toBe(client);
    } finally {
      connected.release();
    }
  });
});
