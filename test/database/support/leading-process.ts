import { advisoryLockKeys } from "../../../src/database/advisory-lock-keys";
import { contendForLead } from "../../../src/database/advisory-lock-leader";

/**
 * A process contending for the checkpointer's lock, for tests that freeze it (SIGSTOP) where a test's own
 * process cannot be frozen. It prints a line when it leads, when its term ends and when it reports a loss.
 * `argv`: the database URL, then `idle` (its lead leaves the session idle) or `in-transaction` (its lead
 * opens a transaction on the session and waits inside it).
 */

const [databaseUrl, mode] = process.argv.slice(2);
if (!databaseUrl || (mode !== "idle" && mode !== "in-transaction"))
  throw new Error("usage: leading-process <database url> idle|in-transaction");

const stopping = new AbortController();
process.on("SIGTERM", () => stopping.abort());

await contendForLead(
  {
    connectionString: databaseUrl,
    lockKey: advisoryLockKeys.ledgerCheckpointer,
    applicationName: "contender-frozen",
    standbyRetryMs: 100,
    queryTimeoutMs: 1_000,
    sessionIdleMaxMs: 1_000,
    lead: async (session, term) => {
      if (mode === "in-transaction") await session.query("BEGIN");
      console.log("leading");
      await new Promise((resolve) => term.addEventListener("abort", resolve, { once: true }));
      console.log("term ended");
    },
    onFailing: (error) => console.log(`lost: ${String(error)}`),
  },
  stopping.signal,
);
