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
  pool.query = keepingSessionsOfRefusals(pool);
  return pool;
}

const neverSent = new WeakSet<object>();

/**
 * Whether `error` is a `pool.query`'s that failed to get a connection (the server refused it, or none came
 * within the pool's connection timeout): the statement was never sent, so nothing of it can have committed.
 */
export function wasNeverSent(error: unknown): boolean {
  return typeof error === "object" && error !== null && neverSent.has(error);
}

/**
 * `pool.query` (promise form only), but a single statement the server refused for reasons outside the session
 * leaves its connection in the pool. pg-pool's own closes the connection of every failed statement, lest a
 * session left inside an aborted transaction, or with a prepared statement gone stale, be reused; yet a lone
 * statement of the extended protocol (named or with parameters: every statement of the request path) runs in
 * a transaction of its own, which its error ends, and such a refusal leaves nothing over. Closing it costs the
 * next statement a new connection and the parsing of its prepared statements: while the database is
 * read-only, a reconnection per refused request. (The error is told before the server's ready-for-query, so
 * the session's transaction status cannot be read instead.)
 */
function keepingSessionsOfRefusals(pool: pg.Pool): pg.Pool["query"] {
  // Callbacks, as pg-pool's own: every statement of the service goes through here.
  const query = (config: string | pg.QueryConfig, values?: unknown) => {
    if (typeof values === "function") throw new TypeError("pool.query takes no callback here");
    return new Promise<pg.QueryResult>((resolve, reject) => {
      pool.connect((connectError, client, release) => {
        if (connectError || !client) {
          if (connectError) neverSent.add(connectError);
          reject(connectError);
          return;
        }
        client.query(
          // A text or a config alike: pg takes either with values and a callback (its typings name text only).
          config as string,
          values as unknown[],
          (error: Error | null, result: pg.QueryResult) => {
            if (!error) {
              release();
              resolve(result);
              return;
            }
            const sessionIntact = isRefusalOutsideTheSession(error) && isLoneStatement(config, values);
            release(sessionIntact ? undefined : error);
            reject(error);
          },
        );
      });
    });
  };
  return query as pg.Pool["query"];
}

/** As pg decides it: a named statement, or one with parameters, goes by the extended protocol, alone. */
function isLoneStatement(config: string | pg.QueryConfig, values: unknown): boolean {
  if (Array.isArray(values) && values.length > 0) return true;
  if (typeof config === "string") return false;
  return config.name !== undefined || (config.values?.length ?? 0) > 0;
}

/**
 * Refusals about the statement's data or the server's state, never the session's: a data exception (22), an
 * integrity violation (23: a key taken), a read-only server (25006), a serialization failure or deadlock (40),
 * a lock not available (55P03), a statement cancelled (57014). Not a prepared statement the schema changed
 * under (0A000, "cached plan must not change result type"), which would fail again on that session.
 */
function isRefusalOutsideTheSession(error: unknown): boolean {
  return (
    error instanceof pg.DatabaseError &&
    typeof error.code === "string" &&
    /^(22|23|25006|40|55P03|57014)/.test(error.code)
  );
}
