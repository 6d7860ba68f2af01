import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createPool } from "../../src/database/pool";

const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const pool = createPool({ url, connectionsMax: 1, applicationName: "pool-connections-test" });
const killer = new pg.Pool({ connectionString: url, max: 1 });

afterAll(async () => {
  await pool.end();
  await killer.end();
});

const backendOfNextStatement = async () =>
  (await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;

describe("the pool's connections", () => {
  it("given a statement the server refuses, then its connection stays in the pool for the next one", async () => {
    const before = await backendOfNextStatement();
    // Refused as a read-only server refuses a hold, one statement with its parameters: the session is as it was.
    await pool.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
    try {
      await expect(
        pool.query({
          name: "pool-refused-write",
          text: "CREATE TEMPORARY TABLE refused AS SELECT $1::int AS id",
          values: [1],
        }),
      ).rejects.toMatchObject({ code: "25006" });
    } finally {
      await pool.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE");
    }
    await expect(pool.query("SELECT 1 / $1::int", [0])).rejects.toMatchObject({ code: "22012" });
    expect(await backendOfNextStatement()).toBe(before);
  });

  it("given a prepared statement the schema changed under, then its connection is closed, and the statement is prepared anew", async () => {
    await pool.query("DROP TABLE IF EXISTS pool_stale_plan; CREATE TABLE pool_stale_plan (id int)");
    const read = { name: "pool-stale-plan-read", text: "SELECT * FROM pool_stale_plan" };
    await pool.query(read);
    const before = await backendOfNextStatement();
    await pool.query("ALTER TABLE pool_stale_plan ADD COLUMN added int");
    await expect(pool.query(read)).rejects.toMatchObject({ code: "0A000" });
    expect(await backendOfNextStatement()).not.toBe(before);
    expect((await pool.query(read)).fields.map((field) => field.name)).toEqual(["id", "added"]);
    await pool.query("DROP TABLE pool_stale_plan");
  });

  it("given statements sent as one text, failing inside the transaction they leave open, then their connection is closed, not lent again aborted", async () => {
    const before = await backendOfNextStatement();
    await expect(pool.query("BEGIN; SELECT 1 / 0")).rejects.toMatchObject({ code: "22012" });
    expect(await backendOfNextStatement()).not.toBe(before);
    expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });

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
