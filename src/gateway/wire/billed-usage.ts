/**
 * Token counts as the client is shown them, in the chat-completions meaning (C7): input includes cached
 * input, output includes reasoning. Every count is a number by the time a body is built: reported by the
 * upstream or, where it was not, counted by the gateway. The client sees the counts it is billed for, so the
 * wire never shows a figure the ledger does not hold.
 */
export interface BilledUsage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}

/** Programmer error, not client error: a count that reached the wire must be a whole, non-negative number. */
export function assertBilledUsage(usage: BilledUsage): void {
  for (const [name, count] of Object.entries(usage)) {
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new Error(`usage.${name} must be a non-negative integer, got ${String(count)}`);
    }
  }
  if (usage.cachedInputTokens > usage.inputTokens) throw new Error("cached input tokens exceed input tokens");
  if (usage.reasoningTokens > usage.outputTokens) throw new Error("reasoning tokens exceed output tokens");
}
