import type pg from "pg";

/** Runs `work` on `client` inside BEGIN … COMMIT, rolled back if it throws. */
export async function inOneTransaction<T>(client: pg.ClientBase, work: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}
