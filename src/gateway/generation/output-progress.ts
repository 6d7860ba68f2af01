import { estimateOutputTokens } from "./token-estimator";

/**
 * A stream's output so far, in tokens, for its progress records (C10). Counted incrementally: each record
 * counts only the text delivered since the one before, so a long stream costs one pass over its output in
 * all, not one per record. Counting in pieces may differ from counting the whole by a token at a piece's
 * edge; the record is an estimate, used only if the gateway dies before it settles the request itself.
 */
export class OutputProgress {
  private countedTokens = 0;
  private uncounted = "";

  /** Text or tool-call names and arguments, as delivered to the client. */
  delivered(text: string): void {
    this.uncounted += text;
  }

  get outputTokens(): number {
    if (this.uncounted !== "") {
      this.countedTokens += estimateOutputTokens(this.uncounted);
      this.uncounted = "";
    }
    return this.countedTokens;
  }
}
