import { sessionLimits } from "../../../src/kernel/limits";

/**
 * The longest text a form field takes, as the server bounds it (src/kernel/limits.ts, imported as the won
 * formatting is): a field that cut a pasted id shorter than the server's bound would name another account,
 * and a top-up would fund it.
 */
export const inputLengthsMax = {
  /** A user's or an organization's id, wherever a form names one. */
  accountId: sessionLimits.accountIdLengthMax,
} as const;
