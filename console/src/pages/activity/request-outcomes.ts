import type { RequestOutcome } from "../../lib/api";
import type { MessageKey } from "../../lib/i18n";

/** How a request ended, in the order the filter offers them, with each one's words and badge. */
export const requestOutcomes: readonly RequestOutcome[] = ["served", "refused", "failed", "cut"];

export const outcomeLabels: Record<RequestOutcome, MessageKey> = {
  served: "outcomeServed",
  refused: "outcomeRefused",
  failed: "outcomeFailed",
  cut: "outcomeCut",
};

export const outcomeBadges: Record<RequestOutcome, string> = {
  served: "badge ok",
  refused: "badge warn",
  failed: "badge bad",
  cut: "badge off",
};
