import type { EventData } from "../../ledger/events";
import type { KeyLimitKind } from "./hold-refusal";

/**
 * The holds port (C10), owned by billing: place holds for a batch of requests, each decided against what
 * its account has really spent and its key's limits, atomically across every gateway process, each granted
 * hold a durable row until its settlement is logged with it. Implemented in PostgreSQL by
 * postgres-usage-authorizations.ts; the event store's own interface stays append, read and subscribe.
 */
export interface UsageAuthorizations {
  /** Rejects with AccountRowsLockedError when an account's row stays taken past the implementation's bound. */
  authorizeUsage(
    requests: readonly UsageAuthorizationRequest[],
    commit: { waitForFlush: boolean },
  ): Promise<UsageAuthorizationDecision[]>;
}

/**
 * A batch waited past its bound for the row of one of its accounts (a transaction left open on it, say), and
 * placed nothing: which account's row it was, the database does not say.
 */
export class AccountRowsLockedError extends Error {
  override readonly name = "AccountRowsLockedError";
}

/**
 * A hold to place: its authorization event's id and data, which its row keeps until it is logged; the
 * statement decides its `holdWon`, and the event's metadata is a hold's own — its key as actor, its request
 * as correlation, the grant's time as `occurredAt` (src/ledger/schema/holds/ledger-hold-authorization.ts).
 */
export interface UsageAuthorizationRequest {
  eventId: string;
  data: Omit<EventData<"UsageAuthorized">, "holdWon">;
}

/**
 * Why no hold: funds, a key limit, or the key no longer usable as the gateway's copy had it — deactivated or
 * deleted since (`key-inactive`), or no longer allowed the model (`model-not-allowed`).
 */
export type UsageRefusalReason = "funds" | KeyLimitKind | KeyRevokedReason;
export type KeyRevokedReason = "key-inactive" | "model-not-allowed";

export type UsageAuthorizationDecision =
  | { kind: "held"; holdWon: string; availableWon: string }
  /** Less than ₩1 was available to this request (what was, after the holds granted before it). */
  | { kind: "refused"; reason: "funds"; availableWon: string }
  /**
   * The key reached a limit (`limit`: requests per minute, or won): its holds this minute, or its held +
   * pending + charged this Seoul month or in total.
   */
  | { kind: "refused"; reason: KeyLimitKind; limit: string; availableWon: string }
  /** The key was deactivated or deleted, or its allowed models changed, after this gateway's copy read it. */
  | { kind: "refused"; reason: KeyRevokedReason; availableWon: string };
