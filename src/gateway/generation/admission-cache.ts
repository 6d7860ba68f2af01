import type { LocalReadModel } from "../../ledger/projection/projection-waiter";
import {
  compareLogPositions,
  isAtOrAfter,
  type LogPosition,
  logStart,
} from "../../ledger/store/log-position";
import { type AdmissionRecord, type AdmissionSnapshot, admissionProjections } from "./admission-read-model";

/**
 * This process's copy of the admission data of the keys it serves, so a generation request costs no
 * database round trip before it goes upstream.
 *
 * Freshness: every projection commit NOTIFYs; each notification re-reads all cached keys in one statement
 * (coalesced: one read in flight, at most one queued). The copy is therefore as fresh as the projections,
 * give or take one notification. A command of this process that waits for the projections (key status,
 * deletion, top-up) also waits for this copy to reach its position, so its next request sees the change
 * (C4). Another process sees it once the notification reaches it; a timer re-reads anyway in case one is
 * lost. Unknown keys are never cached: a flood of made-up keys cannot crowd out real ones.
 */

interface Entry {
  record: AdmissionRecord;
  /** The projection position this record was read at. */
  readAt: LogPosition;
  lastUsedAtMs: number;
}

export interface AdmissionCacheOptions {
  read: (keyHashes: readonly string[]) => Promise<AdmissionSnapshot>;
  entriesMax: number;
  idleMs: number;
  refreshIntervalMs: number;
  onRefreshError: (error: unknown) => void;
  nowMs?: () => number;
}

export class AdmissionCache implements LocalReadModel {
  readonly projections = admissionProjections;
  private readonly entries = new Map<string, Entry>();
  /** Every entry was read at or after this position. */
  private freshAt: LogPosition = logStart;
  private refreshing: Promise<void> | undefined;
  private refreshQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly nowMs: () => number;

  constructor(private readonly options: AdmissionCacheOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  start(): void {
    this.timer ??= setInterval(() => this.checkpointsAdvanced(), this.options.refreshIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async find(keyHash: string): Promise<AdmissionRecord | undefined> {
    const cached = this.entries.get(keyHash);
    if (cached) {
      cached.lastUsedAtMs = this.nowMs();
      return cached.record;
    }
    const snapshot = await this.options.read([keyHash]);
    const record = snapshot.records.get(keyHash);
    // A read older than the last refresh may predate a change that refresh saw: use it once, keep it not.
    if (
      record &&
      isAtOrAfter(snapshot.position, this.freshAt) &&
      this.entries.size < this.options.entriesMax
    ) {
      this.entries.set(keyHash, { record, readAt: snapshot.position, lastUsedAtMs: this.nowMs() });
    }
    return record;
  }

  checkpointsAdvanced(): void {
    this.refresh().catch(this.options.onRefreshError);
  }

  async catchUpTo(target: LogPosition): Promise<void> {
    // A refresh already in flight may have read before `target`; the next one reads after it.
    while (!isAtOrAfter(this.freshAt, target)) await this.refresh();
  }

  private refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshQueued = true;
      return this.refreshing;
    }
    this.refreshing = this.refreshOnce().finally(() => {
      this.refreshing = undefined;
      if (this.refreshQueued) {
        this.refreshQueued = false;
        this.checkpointsAdvanced();
      }
    });
    return this.refreshing;
  }

  private async refreshOnce(): Promise<void> {
    const idleSince = this.nowMs() - this.options.idleMs;
    for (const [keyHash, entry] of this.entries) {
      if (entry.lastUsedAtMs < idleSince) this.entries.delete(keyHash);
    }
    const keyHashes = [...this.entries.keys()];
    const snapshot = await this.options.read(keyHashes);
    for (const keyHash of keyHashes) {
      const entry = this.entries.get(keyHash);
      const record = snapshot.records.get(keyHash);
      if (!record) this.entries.delete(keyHash);
      else if (entry) {
        entry.record = record;
        entry.readAt = snapshot.position;
      }
    }
    // Entries added while this read was in flight may have been read before it: drop those.
    for (const [keyHash, entry] of this.entries) {
      if (compareLogPositions(entry.readAt, snapshot.position) < 0) this.entries.delete(keyHash);
    }
    if (compareLogPositions(snapshot.position, this.freshAt) > 0) this.freshAt = snapshot.position;
  }
}
