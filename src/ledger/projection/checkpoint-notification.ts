import { z } from "zod";
import { assert } from "../../kernel/assert";
import {
  compareLogPositions,
  formatLogPosition,
  type LogPosition,
  parseLogPosition,
} from "../store/log-position";

/**
 * What the projection runner's NOTIFY after a batch says: which part of the log the batch applied and what
 * its events touched, so a local copy re-reads only that. An empty payload says "anything may have
 * changed": sent when the list would be too long, by a runner not told what events touch, and by runners
 * of releases before this one, so copies of every release stay right whichever release runs the
 * projections (an older copy ignores the payload and re-reads everything).
 */

export interface CheckpointChange {
  /** The batch applied every event after `from` up to and including `to`. */
  from: LogPosition;
  to: LogPosition;
  /** What its events touched, as the runner's `touchedBy` names it (in the service: accounts). */
  touched: ReadonlySet<string>;
  /**
   * Of `touched`, the accounts whose keys the batch may have changed (`accountsWithKeysChangedBy`): a copy
   * re-reads their keys, and of the other touched accounts only the funds. Absent from a runner of an
   * earlier release, or one not told: any touched account's keys may have changed.
   */
  keysChanged?: ReadonlySet<string>;
  /**
   * Whether the batch may have changed what a request is priced with (a price, a discount, an FX rate):
   * false lets a process keep the pricing it has in memory. Absent (a runner of an earlier release, or one
   * not told): it may have.
   */
  pricingChanged?: boolean;
  /**
   * The projections whose checkpoints stand at `to` or later once the batch committed: every projection of
   * the runner that sent it. Absent from a runner of an earlier release.
   */
  projections?: readonly string[];
}

export const anythingChanged = "";

/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
export const notificationPayloadBytesMax = 7_999;

/** A payload of another version (a later release's runner) is read as "anything may have changed". */
const payloadSchema = z.object({
  v: z.literal(1),
  from: z.string(),
  to: z.string(),
  touched: z.array(z.string()),
  // Added after the first release of this payload: a copy of that release strips it (zod objects are not
  // strict), and this one reads a payload without it as naming no checkpoint.
  projections: z.array(z.string()).optional(),
  // Added later still, read the same way: a payload without it says any touched account's keys may have
  // changed (a copy of an earlier release re-reads them all, as it always did).
  keysChanged: z.array(z.string()).optional(),
  // Added later still: without it, the batch may have changed any pricing.
  pricingChanged: z.boolean().optional(),
});

export function formatCheckpointNotification(change: CheckpointChange, touchedMax: number): string {
  assert(compareLogPositions(change.from, change.to) < 0, "a batch ends after it begins");
  if (change.touched.size > touchedMax) return anythingChanged;
  const payload: z.infer<typeof payloadSchema> = {
    v: 1,
    from: formatLogPosition(change.from),
    to: formatLogPosition(change.to),
    touched: [...change.touched],
    ...(change.projections ? { projections: [...change.projections] } : {}),
    ...(change.keysChanged ? { keysChanged: [...change.keysChanged] } : {}),
    ...(change.pricingChanged === undefined ? {} : { pricingChanged: change.pricingChanged }),
  };
  const text = JSON.stringify(payload);
  // Names are not bounded in length: a few long ones can fill the payload before `touchedMax` does.
  return Buffer.byteLength(text) <= notificationPayloadBytesMax ? text : anythingChanged;
}

/** The change a payload names, or undefined when it names none ("anything may have changed"). */
export function parseCheckpointNotification(text: string): CheckpointChange | undefined {
  if (text === anythingChanged) return undefined;
  try {
    const payload = payloadSchema.parse(JSON.parse(text));
    const change = {
      from: parseLogPosition(payload.from),
      to: parseLogPosition(payload.to),
      touched: new Set(payload.touched),
      ...(payload.projections ? { projections: payload.projections } : {}),
      ...(payload.keysChanged ? { keysChanged: new Set(payload.keysChanged) } : {}),
      ...(payload.pricingChanged === undefined ? {} : { pricingChanged: payload.pricingChanged }),
    };
    return compareLogPositions(change.from, change.to) < 0 ? change : undefined;
  } catch {
    return undefined;
  }
}
