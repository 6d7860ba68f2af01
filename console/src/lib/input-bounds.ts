import {
  billingLimits,
  keyTextLimits,
  readLimits,
  sessionLimits,
  webhookLimits,
} from "../../../src/kernel/limits";

/**
 * The longest text each kind of form field takes, as the server bounds it (src/kernel/limits.ts, imported as
 * the won formatting is): a field shorter than the server's bound cuts what is pasted into it — an id then
 * names another account, and a top-up funds it — and a longer one lets the page send what the server refuses.
 */
export const inputLengthsMax = {
  /** A user's or an organization's id, wherever a form names one. */
  accountId: sessionLimits.accountIdLengthMax,
  /** Part of an account's id, searched for. */
  accountSearch: readLimits.searchTextLengthMax,
  keyName: keyTextLimits.nameLengthMax,
  keyDescription: keyTextLimits.descriptionLengthMax,
  topUpReference: billingLimits.referenceLengthMax,
  webhookUrl: webhookLimits.urlLengthMax,
} as const;
