import type { AccountKind } from "../../ledger/events";

/**
 * Why a request gets no hold (C10, C13), as a value the HTTP edge maps to its error body once: the account's
 * available funds are below ₩1, the key is over one of its own limits, or the key changed since the gateway's
 * copy of it was read (deactivated, deleted, or its models restricted: C4, C14). Domain code never builds
 * HTTP errors itself.
 */
export type KeyLimitKind = "rate" | "monthly-spend" | "total-spend";

export type HoldRefusal =
  | {
      kind: "funds";
      accountKind: AccountKind /** What the account had available (decimal string). */;
      availableWon: string;
    }
  | { kind: "key-limit"; accountKind: AccountKind; limit: { kind: KeyLimitKind; value: string } }
  /** The key was deactivated or deleted after the gateway's copy of it was read (C4: 401/110). */
  | { kind: "key-inactive" }
  /** The key may no longer call the model (C14: 403/150). */
  | { kind: "model-not-allowed"; model: string };

export class HoldRefusedError extends Error {
  override readonly name = "HoldRefusedError";
  constructor(readonly refusal: HoldRefusal) {
    super(reasonOf(refusal));
  }
}

function reasonOf(refusal: HoldRefusal): string {
  switch (refusal.kind) {
    case "funds":
      return "available funds below 1 won";
    case "key-limit":
      return `key over its ${refusal.limit.kind} limit`;
    case "key-inactive":
      return "the key is no longer active";
    case "model-not-allowed":
      return `the key may no longer call ${refusal.model}`;
  }
}

/** The ledger cannot place or settle holds now (database away, settlements backed up): fail closed. */
export class LedgerUnavailableError extends Error {
  override readonly name = "LedgerUnavailableError";
  constructor() {
    super("the ledger cannot record usage now");
  }
}
