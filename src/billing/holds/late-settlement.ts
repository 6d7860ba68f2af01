import { assert } from "../../kernel/assert";
import { chargeDecimalPlaces, Money } from "../../kernel/money";
import type { EventData, EventMetadata, UsageOutcome, UsageTokens, voidReasons } from "../../ledger/events";
import type { RecordedEvent, RecordedEventOf, StreamAppend } from "../../ledger/store/event-store";
import { usageStreamIdOf } from "../charging/charge-usage";
import { usageCorrectionEventId } from "../commands/deterministic-event-id";
import { assertContiguousVersions, assertReleasesItsHold, assertWonNotNegative } from "../money-invariants";

/**
 * What a gateway writes when its settlement of a request (`UsageRecorded` or `UsageVoided`, at version 1,
 * right after the hold) finds the usage stream not as it left it. What was delivered is what is billed
 * (C10), so the gateway's settlement is never dropped:
 *
 * - the orphan sweep settled the hold first (it presumed this process dead: a partition, a long pause):
 *   the delivered usage is appended as a correcting `UsageRecorded` on the same stream, whose charge is
 *   the difference from the sweep's estimate (a void corrects it to nothing delivered: C7);
 * - the stream is empty: the hold's commit was lost with a database crash (JSON holds commit without
 *   waiting for their flush; the usage's synchronous commit flushes them). The usage is recorded as the
 *   stream's first event, releasing no hold; a void has nothing to release and writes nothing;
 * - the stream already holds this correction, or a settlement of this process: nothing more to write.
 */

export type Settlement =
  | { type: "UsageRecorded"; data: EventData<"UsageRecorded"> }
  | { type: "UsageVoided"; data: EventData<"UsageVoided"> };

export type LateSettlement =
  | { kind: "append"; append: StreamAppend; reason: "corrects-orphan-estimate" | "hold-lost" }
  | { kind: "settled"; reason: "already-corrected" | "void-without-hold" }
  | { kind: "impossible"; reason: string };

/** A void corrects an estimate to nothing delivered: its outcome as a usage's. */
const outcomeOfVoid: Record<(typeof voidReasons)[number], UsageOutcome> = {
  "client-disconnected": "client-disconnected",
  "upstream-failed": "upstream-failed",
  shutdown: "shutdown",
  "deadline-exceeded": "deadline-exceeded",
  // Answered 503 before anything went upstream: the request was cut by the ledger, as a crash cuts one.
  "ledger-unavailable": "interrupted",
};

const nothingDelivered: UsageTokens = { input: 0, cached: null, output: 0, reasoning: null };

export function lateSettlementOf(
  stream: readonly RecordedEvent[],
  settlement: Settlement,
  metadata: EventMetadata,
): LateSettlement {
  const streamId = usageStreamIdOf(settlement.data.requestId);
  if (stream.length === 0) {
    if (settlement.type === "UsageVoided") return { kind: "settled", reason: "void-without-hold" };
    return {
      kind: "append",
      reason: "hold-lost",
      append: {
        streamId,
        expectedVersion: "no-stream",
        events: [
          {
            eventId: usageCorrectionEventId(settlement.data.requestId),
            event: { type: "UsageRecorded", data: { ...settlement.data, heldWon: null }, metadata },
          },
        ],
      },
    };
  }
  const [hold, estimate, ...after] = stream;
  if (hold?.type !== "UsageAuthorized" || estimate?.type !== "UsageRecorded")
    return { kind: "impossible", reason: `stream holds ${stream.map((event) => event.type).join(", ")}` };
  if (after.some((event) => event.type === "UsageRecorded"))
    return { kind: "settled", reason: "already-corrected" };
  assertSettlesTheHold(hold, estimate, settlement);
  assertContiguousVersions(stream, streamId);
  return {
    kind: "append",
    reason: "corrects-orphan-estimate",
    append: {
      streamId,
      expectedVersion: stream.length - 1,
      events: [
        {
          eventId: usageCorrectionEventId(settlement.data.requestId),
          event: {
            type: "UsageRecorded",
            data: correctionOf(estimate, settlement),
            metadata: { ...metadata, causationId: estimate.eventId },
          },
        },
      ],
    },
  };
}

/**
 * The correction moves pending only (its `heldWon` is 0) because the estimate released the whole hold; and
 * the gateway's own settlement, had it come first, would have released that same hold.
 */
function assertSettlesTheHold(
  hold: RecordedEventOf<"UsageAuthorized">,
  estimate: RecordedEventOf<"UsageRecorded">,
  settlement: Settlement,
): void {
  const holdWon = hold.data.holdWon;
  assert(estimate.data.heldWon != null, `the estimate of ${estimate.streamId} releases no hold`);
  assertReleasesItsHold(estimate.data.heldWon, holdWon, `the estimate of ${estimate.streamId}`);
  const releasedWon =
    settlement.type === "UsageRecorded" ? settlement.data.heldWon : settlement.data.releasedWon;
  assert(releasedWon != null, `the settlement of ${estimate.streamId} releases no hold`);
  assertReleasesItsHold(releasedWon, holdWon, `the settlement of ${estimate.streamId}`);
}

function correctionOf(
  estimate: RecordedEventOf<"UsageRecorded">,
  settlement: Settlement,
): EventData<"UsageRecorded"> {
  const estimatedPendingWon = estimate.data.pendingWon;
  assert(estimatedPendingWon != null, `the estimate of ${estimate.streamId} carries no pending amount`);
  const delivered =
    settlement.type === "UsageRecorded"
      ? settlement.data
      : {
          ...estimate.data,
          outcome: outcomeOfVoid[settlement.data.reason],
          tokens: nothingDelivered,
          usageSource: "estimated" as const,
          pendingWon: "0",
        };
  const deliveredPendingWon = delivered.pendingWon;
  assert(deliveredPendingWon != null, `the settlement of ${estimate.streamId} carries no pending amount`);
  // Both are first records' exact costs; only their difference, the correction, may be negative.
  assertWonNotNegative(estimatedPendingWon, `the estimate of ${estimate.streamId}`);
  assertWonNotNegative(deliveredPendingWon, `the settlement of ${estimate.streamId}`);
  return {
    ...delivered,
    // The estimate released the hold; this moves pending by the difference only.
    heldWon: "0",
    pendingWon: new Money(deliveredPendingWon).minus(estimatedPendingWon).toFixed(chargeDecimalPlaces),
    corrects: { eventId: estimate.eventId, pendingWon: estimatedPendingWon },
  };
}
