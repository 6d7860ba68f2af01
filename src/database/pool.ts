import pg from "pg";

// NUMERIC stays a string (money is never a JS number); int8 becomes bigint only where asked for.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (text) => text);

export interface PoolOptions {
  url: string;
  connectionsMax: number;
  applicationName: string;
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.connectionsMax,
    application_name: options.applicationName,
    // Every statement here is short. JIT compilation starts at a plan cost that misjudged estimates (an
    // unanalysed table, a default selectivity) easily pass, and then costs 100 ms for a 2 ms statement.
    options: "-c jit=off",
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  // Nor must a checked-out one between two statements (the server restarted mid-transaction): its error
  // event, unheard, would be thrown. The work hears of it instead, as its next statement's failure, and the
  // pool discards the client on release (it is no longer queryable).
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}
