import type pg from "pg";

/**
 * Lends `work` one pooled connection for a long piece of work (a rebuild, a verify). A connection lost
 * between two statements (the server restarted, the backend was killed) fails the next one; unheard, the
 * client's error event would end the process instead. `isLost` tells clean-up not to talk to it, and a lost
 * connection is discarded, not handed to the pool's next caller.
 */
export async function withHeldConnection<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, isLost: () => boolean) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onLost = (error: Error) => {
    lost = error;
  };
  client.on("error", onLost);
  try {
    return await work(client, () => lost !== undefined);
  } finally {
    client.off("error", onLost);
    client.release(lost);
  }
}
