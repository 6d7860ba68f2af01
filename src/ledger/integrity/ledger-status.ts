import type { ClientBase } from "pg";
import { readLimits } from "../../kernel/limits";
import { logStart } from "../store/log-position";
import { describeCheckpoint } from "./event-proof";
import {
  checkpointHashOf,
  checkpointsAfter,
  firstPreviousCheckpointHash,
  latestCheckpoint,
} from "./ledger-checkpoint";
import { type IntegrityReport, verifyIntegrity } from "./ledger-integrity";
import { verifySignature } from "./ledger-signing-key";

/**
 * What an admin sees of the ledger's integrity, at two costs:
 * - `readLedgerStatus`, constant cost (a handful of indexed rows): the latest signed checkpoint, whether it
 *   is intact on its own (its hash, its signature under the configured key, its link to the previous one)
 *   and how many events wait for the next seal. Cheap enough for every page view.
 * - `verifyLedgerOnDemand`: the whole `ledger verify` integrity pass (every hash chain, every checkpoint's
 *   root), linear in the log. Run only when asked, one at a time per process, and only on a log small enough
 *   to answer within an HTTP request; a bigger log answers "too large" and names the command to run.
 */

type Queryable = Pick<ClientBase, "query">;

export const fullVerifyCommand = "npm run ledger -- verify";

export interface LatestCheckpointStatus {
  checkpoint: ReturnType<typeof describeCheckpoint>;
  hashMatches: boolean;
  /** null: no signing key configured here, so the signature is not checked. */
  signatureValid: boolean | null;
  chainsToPrevious: boolean;
}

export interface LedgerStatus {
  latest: LatestCheckpointStatus | null;
  unsealedEventCount: number;
  /** True when there are more unsealed events than were counted. */
  unsealedEventCountIsLowerBound: boolean;
}

export async function readLedgerStatus(
  client: Queryable,
  trustedPublicKey: Buffer | undefined,
): Promise<LedgerStatus> {
  const latest = await latestCheckpoint(client);
  const after = latest?.last ?? logStart;
  const unsealed = await client.query<{ count: string }>(
    `SELECT count(*) AS count FROM (
       SELECT 1 FROM ledger_events WHERE (transaction_order, position) > ($1, $2) LIMIT $3) AS unsealed`,
    [String(after.commit), String(after.prepare), readLimits.ledgerUnsealedEventsCountedMax + 1],
  );
  const unsealedEventCount = Number(unsealed.rows[0]!.count);
  const status = {
    unsealedEventCount: Math.min(unsealedEventCount, readLimits.ledgerUnsealedEventsCountedMax),
    unsealedEventCountIsLowerBound: unsealedEventCount > readLimits.ledgerUnsealedEventsCountedMax,
  };
  if (latest === undefined) return { latest: null, ...status };
  const [previous] =
    latest.sequence > 1 ? await checkpointsAfter(client, latest.sequence - 2, 1) : [undefined];
  const recomputed = checkpointHashOf(latest);
  return {
    latest: {
      checkpoint: describeCheckpoint(latest),
      hashMatches: recomputed.equals(latest.checkpointHash),
      signatureValid:
        trustedPublicKey === undefined
          ? null
          : verifySignature(trustedPublicKey, recomputed, latest.signature),
      chainsToPrevious:
        previous?.sequence === latest.sequence - 1 || latest.sequence === 1
          ? latest.previousCheckpointHash.equals(previous?.checkpointHash ?? firstPreviousCheckpointHash)
          : false,
    },
    ...status,
  };
}

export type OnDemandVerification =
  | { outcome: "verified"; report: IntegrityReport; verifiedAt: string; durationMs: number }
  | { outcome: "too-large"; eventsMax: number; command: string };

/** One verification at a time per process: a second request while one runs shares its answer. */
export class OnDemandLedgerVerifier {
  private running: Promise<OnDemandVerification> | undefined;

  constructor(
    private readonly client: Queryable,
    private readonly trustedPublicKey: Buffer | undefined,
    private readonly eventsMax: number = readLimits.ledgerVerifyOnDemandEventsMax,
  ) {}

  verify(): Promise<OnDemandVerification> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async run(): Promise<OnDemandVerification> {
    const counted = await this.client.query<{ count: string }>(
      "SELECT count(*) AS count FROM (SELECT 1 FROM ledger_events LIMIT $1) AS events",
      [this.eventsMax + 1],
    );
    if (Number(counted.rows[0]!.count) > this.eventsMax) {
      return { outcome: "too-large", eventsMax: this.eventsMax, command: fullVerifyCommand };
    }
    const startedMs = performance.now();
    const report = await verifyIntegrity(this.client, this.trustedPublicKey);
    return {
      outcome: "verified",
      report,
      verifiedAt: new Date().toISOString(),
      durationMs: Math.round(performance.now() - startedMs),
    };
  }
}

/**
 * The latest checkpoint's sequence when `publicKey` does not verify its signature: this process was given
 * another signing key than the one that sealed the ledger (a mistyped LEDGER_SIGNING_KEY, another
 * deployment's), so /ledger/public-key would publish a key its receipts fail under. Undefined when it
 * verifies, or nothing is sealed yet.
 */
export async function checkpointSignedByAnotherKey(
  client: Queryable,
  publicKey: Buffer,
): Promise<number | undefined> {
  const latest = await latestCheckpoint(client);
  if (latest === undefined) return undefined;
  return verifySignature(publicKey, checkpointHashOf(latest), latest.signature) ? undefined : latest.sequence;
}
