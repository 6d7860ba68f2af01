import type pg from "pg";
import { assert } from "../../kernel/assert";
import { billingLimits } from "../../kernel/limits";
import { type LedgerEventOf, parseLedgerEvent, type UsageTokens } from "../../ledger/events";
import {
  type EventStore,
  type RecordedEventOf,
  WrongExpectedVersionError,
} from "../../ledger/store/event-store";
import { billingMetrics } from "../billing-metrics";
import { pricingRequestOf, usageStreamIdOf } from "../charging/charge-usage";
import { orphanSettlementEventId } from "../commands/deterministic-event-id";
import { keyKindLabelOf } from "../metric-labels";
import { assertWonNotNegative } from "../money-invariants";
import {
  type PricingInForce,
  type PricingReadModel,
  type PricingRequest,
  PricingUnavailableError,
} from "../read-models/pricing-read-model";
import { costWonOf } from "./hold-pricing";
import { type HoldRowCompletion, rowEventOf } from "./hold-row-completion";
import type { SettledHoldsLog } from "./settled-holds-log";
import type { SweptHoldReserves } from "./swept-hold-reserves";

/**
 * Settles orphaned holds (C10): holds whose gateway process stopped beating (it died mid-request, or
 * stopped before writing every settlement), and holds neither settled nor renewed within their lifetime
 * (a leak: no living process serves them). Each is settled with a `UsageRecorded` of outcome `interrupted`
 * and source `estimated`, where the gateway's own settlement would go: a hold row is completed in place
 * (this process's log writer appends it and enqueues its charge), a hold in the log — placed by an earlier
 * release — gets it at version 1 of its stream and its charge enqueued here. Should the gateway that served
 * it be alive after all, its own settlement arrives later as a correction (late-settlement.ts).
 *
 * A gateway is judged dead only on evidence that survives a database outage: the sweeper itself must have
 * been reading the heartbeats, without a break, for the whole window in which the gateway's beat stayed
 * still (`HeartbeatWatch`). After an outage — the sweeper's own reads failing — it watches a full window
 * before it settles anything, by which time every living gateway has beaten again.
 *
 * What is known of an orphan is its hold and its last progress record. The input is what its upstream
 * reported before the stream's end, as the record has it (messages' `message_start`, generateContent's
 * chunks: the input and its cached part), as the gateway itself would bill a stream cut short; where the
 * record has none (not reported, no record, or a record written by an older release) it is estimated at
 * four bytes a token of the request body (the bytes bound the tokens from above, and four is the usual
 * ratio), with cached input not reported. The output is what the last progress record counted as delivered
 * (0 when there was none). The usage is priced and named as the model answering, as the gateway's own
 * settlement would be: the configured fallback the record names, once one had begun to answer (C13; the
 * output it counted is that fallback's, since a model is left for its fallback only before any output),
 * else the model asked for (no record, or one written by an older release, names none).
 *
 * A gateway presumed dead while it lived (paused, or cut off from the database) may have delivered more
 * than its last record counted, and bills it later by its correction. So while the hold's gateway still has
 * its session (gateway-session.ts), what the estimate does not use of the hold stays reserved for
 * `reserveMs`, or until that correction arrives or the session ends (swept-hold-reserves.ts): the sweep never
 * frees money another request could spend before the correction takes it. A gateway whose session is gone
 * died, and its holds' money is free at once.
 *
 * A hold no price exists for at its start (its model, or the fallback answering it, left the catalog with a
 * release, never priced by an operator) is left open, never settled at another price: the sweep settles the
 * others, names it, and settles it once that model is priced.
 */

export const orphanSettlementActor = "system:orphan-hold-sweep";
const bytesPerEstimatedToken = 4;

export interface OrphanHoldSettlementOptions {
  /** A process whose heartbeat the sweeper has watched stay still this long is presumed dead. */
  presumedDeadAfterMs: number;
  /** Reads of the heartbeats further apart than this break the watch (see HeartbeatWatch). */
  observationGapMaxMs: number;
  /** A hold younger than this is never an orphan (its process may not have beaten yet). */
  holdAgeMinMs: number;
  /** Holds settled by one sweep. */
  holdsPerSweepMax: number;
  /** What a swept hold's estimate does not use stays reserved this long for its gateway's correction. */
  reserveMs: number;
}

export interface OrphanHoldSettlementDependencies {
  database: Pick<pg.Pool, "query">;
  completion: Pick<HoldRowCompletion, "completeSwept">;
  reserves: Pick<SweptHoldReserves, "reserve" | "release" | "releaseEnded">;
  /** This process's log writer, told of each row the sweep completed, as the gateway tells its own. */
  log: Pick<SettledHoldsLog, "settled">;
  store: Pick<EventStore, "readStreams" | "append">;
  pricing: PricingReadModel;
  enqueueCharges: (requestIds: readonly string[]) => Promise<void>;
  clock: () => Date;
}

/**
 * The sweeper's unbroken watch over the heartbeats, on the database's clock: since when it has read them
 * with no gap longer than `observationGapMaxMs`. A failed read, or a gap (the sweeper paused, or it lost the
 * lead and took it back), starts the watch anew.
 */
export class HeartbeatWatch {
  private watchingSinceMs: number | undefined;
  private lastReadMs: number | undefined;

  constructor(private readonly observationGapMaxMs: number) {}

  read(databaseNowMs: number): void {
    if (this.lastReadMs === undefined || databaseNowMs - this.lastReadMs > this.observationGapMaxMs)
      this.watchingSinceMs = databaseNowMs;
    this.lastReadMs = databaseNowMs;
  }

  failed(): void {
    this.watchingSinceMs = undefined;
    this.lastReadMs = undefined;
  }

  /** How long the watch has been unbroken at its last read (0 when it is broken). */
  get watchedMs(): number {
    return this.watchingSinceMs === undefined ? 0 : this.lastReadMs! - this.watchingSinceMs;
  }
}

export async function settleOrphanHolds(
  dependencies: OrphanHoldSettlementDependencies,
  options: OrphanHoldSettlementOptions,
  watch: HeartbeatWatch,
): Promise<{ settledCount: number; watchedMs: number; unpriceable: string[] }> {
  const orphans = await findOrphans(dependencies.database, options, watch);
  await dependencies.reserves.releaseEnded();
  const progressOf = new Map(orphans.map((row) => [row.request_id, row]));
  const reserveMsOf = new Map(
    orphans.map((row) => [row.request_id, row.gateway_session_alive ? options.reserveMs : undefined]),
  );
  const rowHolds = orphans.flatMap((row) => (row.hold === null ? [] : [row.hold]));
  const logHolds = await holdsInTheLog(
    dependencies,
    orphans.flatMap((row) => (row.hold === null ? [row.request_id] : [])),
  );
  const holds = [...rowHolds, ...logHolds];
  if (holds.length === 0) return { settledCount: 0, watchedMs: watch.watchedMs, unpriceable: [] };

  const models = holds.map((hold) => modelAnsweringOf(hold, progressOf.get(hold.data.requestId)));
  const pricings = await pricingsOf(
    dependencies.pricing,
    holds.map((hold, index) => pricingRequestOf({ ...hold.data, model: models[index]! })),
  );
  let settledCount = 0;
  const settledInTheLog: string[] = [];
  const unpriceable: string[] = [];
  for (const [index, hold] of holds.entries()) {
    const pricing = pricings[index]!;
    if (pricing instanceof PricingUnavailableError) {
      unpriceable.push(hold.data.requestId);
      continue;
    }
    const tokens = orphanTokensOf(hold, progressOf.get(hold.data.requestId));
    const settlement = orphanSettlementOf(
      hold,
      { model: models[index]!, tokens, pendingWon: costWonOf(pricing, tokens) },
      dependencies.clock(),
    );
    const settled =
      index < rowHolds.length
        ? await dependencies.completion.completeSwept(
            {
              requestId: hold.data.requestId,
              settlement: rowEventOf(orphanSettlementEventId(hold.data.requestId), settlement),
              pendingWon: settlement.data.pendingWon!,
            },
            reserveMsOf.get(hold.data.requestId),
          )
        : await appendSettlement(dependencies, hold, settlement, reserveMsOf.get(hold.data.requestId));
    if (!settled) continue;
    settledCount += 1;
    if (index < rowHolds.length) dependencies.log.settled(hold.data.requestId);
    else settledInTheLog.push(hold.data.requestId);
    billingMetrics.observeHold({
      outcome: "orphaned",
      keyKind: keyKindLabelOf(hold.data.account.kind),
      amountWon: hold.data.holdWon,
    });
  }
  if (settledInTheLog.length > 0) await dependencies.enqueueCharges(settledInTheLog);
  return { settledCount, watchedMs: watch.watchedMs, unpriceable };
}

/** The holds of these requests that are still just their stream's hold (anything else was settled since). */
async function holdsInTheLog(
  dependencies: OrphanHoldSettlementDependencies,
  requestIds: readonly string[],
): Promise<OrphanHold[]> {
  if (requestIds.length === 0) return [];
  const streams = await dependencies.store.readStreams(requestIds.map(usageStreamIdOf));
  return requestIds
    .map((requestId) => streams.get(usageStreamIdOf(requestId)) ?? [])
    .filter((stream) => stream.length === 1 && stream[0]!.type === "UsageAuthorized")
    .map((stream) => stream[0] as RecordedEventOf<"UsageAuthorized">);
}

/** What the sweep knows of a hold: its authorization, from its row or from the log. */
type OrphanHold = Pick<RecordedEventOf<"UsageAuthorized">, "eventId" | "data">;

/**
 * Each hold's pricing at its start, as the model answering it, or why it has none,
 * `pricingRequestsPerQueryMax` holds per query: a sweep may take more holds (`orphanHoldsPerSweepMax`) than
 * one pricing query accepts, and a query asked for more refuses them all.
 */
async function pricingsOf(
  pricing: PricingReadModel,
  requests: readonly PricingRequest[],
): Promise<(PricingInForce | PricingUnavailableError)[]> {
  const pricings: (PricingInForce | PricingUnavailableError)[] = [];
  const chunkSize = billingLimits.pricingRequestsPerQueryMax;
  for (let start = 0; start < requests.length; start += chunkSize)
    pricings.push(...(await pricing.pricingEachAt(requests.slice(start, start + chunkSize))));
  // Matched by place: a pricing out of step would settle one hold at another's prices.
  assert(pricings.length === requests.length, `${pricings.length} pricings for ${requests.length} orphans`);
  return pricings;
}

/**
 * The holds to settle now, with their last recorded output, and for a hold row its authorization (a hold in
 * the log is read from it): none until the watch is long enough. Any failure to read breaks the watch. Also
 * forgets the progress records of requests settled since.
 */
async function findOrphans(
  database: OrphanHoldSettlementDependencies["database"],
  options: OrphanHoldSettlementOptions,
  watch: HeartbeatWatch,
): Promise<OrphanRow[]> {
  try {
    const read = await database.query<{ now_ms: string }>(
      "SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms FROM (SELECT count(*) FROM gateway_instances) seen",
    );
    watch.read(Number(read.rows[0]!.now_ms));
    if (watch.watchedMs < options.presumedDeadAfterMs) return [];
    // A stream's last progress record also renews its hold: expiry counts from the later of the two.
    const found = await database.query<OrphanRow>(
      `SELECT holds.request_id, progress.output_tokens, progress.input_tokens, progress.cached_input_tokens,
              progress.answering_model, holds.hold,
              ledger_gateway_session_alive(holds.gateway_instance) AS gateway_session_alive
       FROM (
         SELECT request_id, gateway_instance, placed_at, expires_at, ledger_hold_authorization(holds) AS hold
         FROM request_holds holds WHERE settled_at IS NULL
         UNION ALL
         SELECT request_id, gateway_instance, placed_at, expires_at, NULL FROM open_holds
       ) holds
       LEFT JOIN gateway_instances instances ON instances.instance_id = holds.gateway_instance
       LEFT JOIN hold_progress progress ON progress.request_id = holds.request_id
       WHERE holds.placed_at < now() - make_interval(secs => $1 / 1000.0)
         AND (instances.seen_at IS NULL OR instances.seen_at < now() - make_interval(secs => $2 / 1000.0)
              OR greatest(holds.expires_at, progress.renewed_until) < now())
       ORDER BY holds.placed_at
       LIMIT $3`,
      [options.holdAgeMinMs, options.presumedDeadAfterMs, options.holdsPerSweepMax],
    );
    await database.query(
      `DELETE FROM hold_progress progress
       WHERE NOT EXISTS (SELECT 1 FROM open_holds holds WHERE holds.request_id = progress.request_id)
         AND NOT EXISTS (SELECT 1 FROM request_holds holds
                         WHERE holds.request_id = progress.request_id AND holds.settled_at IS NULL)
         AND progress.recorded_at < now() - make_interval(secs => $1 / 1000.0)`,
      [options.holdAgeMinMs],
    );
    return found.rows;
  } catch (error) {
    watch.failed();
    throw error;
  }
}

interface OrphanRow {
  request_id: string;
  /** The last progress record's counts: null without a record; input null where none was reported. */
  output_tokens: number | null;
  input_tokens: number | null;
  cached_input_tokens: number | null;
  /** The configured fallback the last record found answering; null for the model asked for, or no record. */
  answering_model: string | null;
  /** A hold row's authorization; null for a hold in the log. */
  hold: OrphanHold | null;
  /** Whether the hold's gateway still has its session: paused or cut off, not dead (gateway-session.ts). */
  gateway_session_alive: boolean;
}

/**
 * The orphan's usage: the input its upstream reported, with its cached part, else four bytes of the body a
 * token and cached input not reported; the output its last progress record counted.
 */
function orphanTokensOf(hold: OrphanHold, progress: OrphanRow | undefined): UsageTokens {
  assert(progress, `the orphan ${hold.data.requestId} settled without the row that found it`);
  const reportedInputTokens = progress.input_tokens;
  return {
    input: reportedInputTokens ?? Math.ceil(hold.data.estimate.inputTokensMax / bytesPerEstimatedToken),
    cached: reportedInputTokens === null ? null : progress.cached_input_tokens,
    output: progress.output_tokens ?? 0,
    reasoning: null,
  };
}

/**
 * The model the orphan's usage is priced and named as: the fallback its last record found answering, as the
 * gateway's own settlement names it (generation-holds.ts), else the model asked for.
 */
function modelAnsweringOf(hold: OrphanHold, progress: OrphanRow | undefined): string {
  assert(progress, `the orphan ${hold.data.requestId} settled without the row that found it`);
  return progress.answering_model ?? hold.data.model;
}

/** The orphan's settlement: its estimated usage, as the model answering it, releasing the whole hold. */
function orphanSettlementOf(
  hold: OrphanHold,
  { model, tokens, pendingWon }: { model: string; tokens: UsageTokens; pendingWon: string },
  now: Date,
) {
  const requestId = hold.data.requestId;
  assertWonNotNegative(pendingWon, `the estimated cost of ${requestId}`);
  return parseLedgerEvent({
    type: "UsageRecorded",
    data: {
      requestId,
      keyId: hold.data.keyId,
      account: hold.data.account,
      userId: hold.data.userId,
      organizationId: hold.data.organizationId,
      model,
      endpoint: hold.data.endpoint,
      streamed: hold.data.streamed,
      outcome: "interrupted",
      tokens,
      usageSource: "estimated",
      startedAt: hold.data.startedAt,
      heldWon: hold.data.holdWon,
      pendingWon,
    },
    metadata: {
      actor: orphanSettlementActor,
      correlationId: requestId,
      causationId: hold.eventId,
      occurredAt: now.toISOString(),
    },
  }) as LedgerEventOf<"UsageRecorded">;
}

/**
 * Appends a logged hold's settlement right after it, where the gateway's own would go, with `reserveMs` its
 * reserve placed first; false when the gateway's own came first (and the reserve is released).
 */
async function appendSettlement(
  dependencies: OrphanHoldSettlementDependencies,
  hold: OrphanHold,
  event: LedgerEventOf<"UsageRecorded">,
  reserveMs: number | undefined,
): Promise<boolean> {
  const requestId = hold.data.requestId;
  if (reserveMs !== undefined)
    await dependencies.reserves.reserve(
      hold.data,
      {
        holdWon: hold.data.holdWon,
        estimatedWon: hold.data.estimate.estimatedWon,
        estimatedCostWon: event.data.pendingWon!,
      },
      reserveMs,
    );
  try {
    await dependencies.store.append({
      streamId: usageStreamIdOf(requestId),
      // Settled where the gateway's own settlement would go, right after the hold, releasing it whole.
      expectedVersion: 0,
      events: [{ eventId: orphanSettlementEventId(requestId), event }],
    });
  } catch (error) {
    // The gateway's own settlement came first: nothing is left to settle, nor to keep back for it.
    if (error instanceof WrongExpectedVersionError) {
      await dependencies.reserves.release(requestId);
      return false;
    }
    throw error;
  }
  return true;
}
