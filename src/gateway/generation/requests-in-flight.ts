/**
 * The generation requests this process is serving, so that it can end them itself: at the drain bound of a
 * stop (`shutdown`), when a stream outlives its deadline (`deadline-exceeded`), or when the orphan sweep
 * released its hold, presuming this process dead (`interrupted`, as the sweep's own settlement says). A cut
 * request ends as its format says (a stream with the format's own error event) and is billed for what it
 * delivered, with an outcome that says the gateway cut it, not the client (C10).
 */

export type GatewayCutReason = "shutdown" | "deadline-exceeded" | "interrupted";

/** The abort reason of a request the gateway cut. */
export class GatewayCut extends Error {
  override readonly name = "GatewayCut";
  constructor(readonly reason: GatewayCutReason) {
    super(`the gateway cut the request: ${reason}`);
  }
}

export class RequestsInFlight {
  private readonly cuts = new Set<(cut: GatewayCut) => void>();

  /** Registers a request until the returned function is called. */
  register(cut: (cut: GatewayCut) => void): () => void {
    this.cuts.add(cut);
    return () => this.cuts.delete(cut);
  }

  get size(): number {
    return this.cuts.size;
  }

  /** Cuts every request in flight; answers how many there were. */
  cutAll(reason: GatewayCutReason): number {
    const cuts = [...this.cuts];
    for (const cut of cuts) cut(new GatewayCut(reason));
    return cuts.length;
  }
}
