import type { LogPosition } from "../../ledger/store/log-position";

/** What billing needs of `ProjectionWaiter`: read-your-writes, nothing else (tests pass the real one). */
export interface ProjectionWaiting {
  waitFor(target: LogPosition, projections: readonly string[], timeoutMs: number): Promise<void>;
}

export type Clock = () => Date;
