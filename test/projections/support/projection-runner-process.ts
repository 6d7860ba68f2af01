import { allProjections } from "../../../projections";
import { accountsTouchedBy, accountsWithKeysChangedBy } from "../../../src/ledger/events";
import { ProjectionRunner } from "../../../src/ledger/projection/projection-runner";
import { openLedger } from "../../../src/ledger/store/open-ledger";

/**
 * A worker's projection runner in a process of its own, for tests that kill it outright (SIGKILL) where a
 * test's own process cannot be killed. It prints a line when it starts, after each batch it applies, and
 * when it starts failing or recovers. `argv`: the database URL, then the batch size.
 */

const [databaseUrl, batchSize] = process.argv.slice(2);
if (!databaseUrl || !batchSize)
  throw new Error("usage: projection-runner-process <database url> <batch size>");

const stopping = new AbortController();
process.on("SIGTERM", () => stopping.abort());

const ledger = await openLedger({ databaseUrl, applicationName: "projection-runner-process" });
const runner = new ProjectionRunner({
  pool: ledger.pool,
  connectionString: databaseUrl,
  store: ledger.store,
  projections: allProjections,
  batchSizeMax: Number(batchSize),
  standbyRetryMs: 100,
  touchedBy: accountsTouchedBy,
  keysChangedBy: accountsWithKeysChangedBy,
  onProgress: (_position, eventCount) => console.log(`applied ${eventCount}`),
  onError: (error) => console.log(`failing: ${String(error)}`),
  onRecovered: () => console.log("recovered"),
});
console.log("started");
await runner.run(stopping.signal);
await ledger.close();
