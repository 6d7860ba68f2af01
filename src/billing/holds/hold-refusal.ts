import type { AccountKind } from "../../ledger/events";

/**
 * Why a request gets no hold (C10, C13), as a value the HTTP edge maps to its error body once: the account's
 * available funds are below ₩1, or the key is over one of its own limits. Domain code never builds HTTP
 * errors itself.
 */
export type KeyLimitKind = "rate" | "monthly-spend" | "total-spend";

export type HoldRefusal =
  | {
      kind: "funds";
      accountKind: AccountKind /** What the account had available (decimal string). */;
      availableWon: string;
    }
  | { kind: "key-limit"; accountKind: AccountKind; limit: { kind: KeyLimitKind; value: string } };

export class HoldRefusedError extends Error {
  override readonly name = "HoldRefusedError";
  constructor(readonly refusal: HoldRefusal) {
    super(
      refusal.kind === "funds" ? "available funds below 1 won" : `key over its ${refusal.limit.kind} limit`,
    );
  }
}

/** The ledger cannot place or settle holds now (database away, settlements backed up): fail closed. */
export class LedgerUnavailableError extends Error {
  override readonly name = "LedgerUnavailableError";
  constructor() {
    super("the ledger cannot record usage now");
  }
}
