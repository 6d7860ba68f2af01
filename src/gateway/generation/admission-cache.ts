import { assert } from "../../kernel/assert";
import { accountNameOf } from "../../ledger/events";
import type { CheckpointChange } from "../../ledger/projection/checkpoint-notification";
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
 * Freshness: every projection commit NOTIFYs the part of the log it applied, (from, to], and the accounts
 * its events touched (a key's owner, a top-up's, hold's, usage's or charge's paying account), saying which
 * of them had their keys changed. When that batch follows on from what this copy has seen
 * (`from` ≤ `freshAt`), only the cached keys of the accounts whose keys changed are re-read, and of each
 * other touched account one key, whose record carries the account's funds to its other cached keys (one row,
 * however many of its keys are cached), in one statement: no other entry can have changed up to `to`. A
 * notification that does not say whose keys changed (a runner of an earlier release) has every touched
 * account's keys re-read. Otherwise — a batch missed, a reconnect, a notification that names nothing (too
 * many accounts, an older runner), a lost notification found by the timer — every cached key is re-read.
 * One read is in flight at a time; notifications arriving meanwhile are merged into the next. The copy is
 * therefore as fresh as the projections, give or take one notification.
 * A command of this process that waits for the projections (key status, deletion, top-up) also waits for
 * this copy to reach its position, so its next request sees the change (C4). Another process sees it once
 * the notification reaches it. In case one is lost, a timer reads where the projections are each tick (no
 * key) and re-reads everything only when the copy has not reached, a tick later, where they were: a cost
 * that does not grow with the keys cached. Unknown keys are never cached: a flood of made-up keys cannot
 * crowd out real ones. Keys not cached are read one statement at a time, those that arrive while one is in
 * flight together in the next: a flood of made-up keys costs a statement per round trip, not per request.
 */

interface Entry {
  record: AdmissionRecord;
  /** Its owner's `accountNameOf`: what notifications name. */
  account: string;
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

const everything = "everything";

interface KeyWaiter {
  resolve: (snapshot: AdmissionSnapshot) => void;
  reject: (error: unknown) => void;
}

/** What a refresh re-reads: every cached key, or those of the accounts a run of batches touched. */
type RefreshScope = CheckpointChange | typeof everything;

export class AdmissionCache implements LocalReadModel {
  readonly projections = admissionProjections;
  private readonly entries = new Map<string, Entry>();
  /** The key hashes of `entries` by owner, so a partial refresh costs what it touched, not the cache size. */
  private readonly keysByAccount = new Map<string, Set<string>>();
  /** Every entry was read at or after this position, or is unchanged by every event up to it. */
  private freshAt: LogPosition = logStart;
  private refreshing: Promise<void> | undefined;
  /** What the refresh after the one in flight must cover. */
  private queued: RefreshScope | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Where the projections were at the timer's last tick; undefined until a tick has read it. */
  private projectionsAtLastTick: LogPosition | undefined;
  private ticking = false;
  /** Whether a read of keys not cached is in flight, and the keys that arrived meanwhile, by their waiters. */
  private keyReadInFlight = false;
  private keysWaiting: Map<string, KeyWaiter[]> | undefined;
  private readonly nowMs: () => number;

  constructor(private readonly options: AdmissionCacheOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** How fresh the copy is: what `catchUpTo` compares with. */
  get caughtUpTo(): LogPosition {
    return this.freshAt;
  }

  start(): void {
    this.timer ??= setInterval(() => {
      this.tick().catch(this.options.onRefreshError);
    }, this.options.refreshIntervalMs);
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
    const snapshot = await this.readKey(keyHash);
    const record = snapshot.records.get(keyHash);
    // A read older than the last refresh may predate a change that refresh saw: use it once, keep it not.
    if (
      record &&
      isAtOrAfter(snapshot.position, this.freshAt) &&
      this.entries.size < this.options.entriesMax
    ) {
      this.add(keyHash, { record, account: accountNameOf(record.owner), readAt: snapshot.position });
    }
    return record;
  }

  /**
   * The key as the projections hold it now, whatever this copy holds: for the reads that answer from the
   * key alone (listing its models), which no hold checks after them (C4: a change made through another
   * process holds for the next request). A key gone from the projections leaves this copy too.
   */
  async findFresh(keyHash: string): Promise<AdmissionRecord | undefined> {
    const record = (await this.readKey(keyHash)).records.get(keyHash);
    if (!record) this.remove(keyHash);
    return record;
  }

  /**
   * A key not cached is read at once when no such read is in flight; else it waits for that read and goes
   * with every other key that arrived meanwhile, in one statement.
   */
  private readKey(keyHash: string): Promise<AdmissionSnapshot> {
    if (!this.keyReadInFlight) return this.readKeys([keyHash]);
    this.keysWaiting ??= new Map();
    const waiting = this.keysWaiting;
    return new Promise((resolve, reject) => {
      const waiters = waiting.get(keyHash);
      if (waiters) waiters.push({ resolve, reject });
      else waiting.set(keyHash, [{ resolve, reject }]);
    });
  }

  private readKeys(keyHashes: readonly string[]): Promise<AdmissionSnapshot> {
    this.keyReadInFlight = true;
    const reading = this.options.read(keyHashes);
    const next = () => {
      this.keyReadInFlight = false;
      const waiting = this.keysWaiting;
      this.keysWaiting = undefined;
      if (!waiting) return;
      this.readKeys([...waiting.keys()]).then(
        (snapshot) => {
          for (const waiters of waiting.values()) for (const { resolve } of waiters) resolve(snapshot);
        },
        (error: unknown) => {
          for (const waiters of waiting.values()) for (const { reject } of waiters) reject(error);
        },
      );
    };
    reading.then(next, next);
    return reading;
  }

  /** `change` undefined: anything may have changed. */
  checkpointsAdvanced(change?: CheckpointChange): void {
    this.refresh(change ?? everything).catch(this.options.onRefreshError);
  }

  async catchUpTo(target: LogPosition): Promise<void> {
    // Usually the notification of `target`'s batch has a refresh under way already: wait for it rather than
    // read every key. A read in flight may have begun before `target`; when none that would follow reaches
    // it, read everything, after it.
    while (!isAtOrAfter(this.freshAt, target)) await (this.refreshing ?? this.refresh(everything));
  }

  /**
   * The safety net for a lost notification. One reaches this process well within a tick, so a copy that
   * is not yet fresh where the projections were a tick ago has missed one, and re-reads everything.
   */
  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      this.dropIdle();
      const seenLastTick = this.projectionsAtLastTick;
      this.projectionsAtLastTick = (await this.options.read([])).position;
      if (seenLastTick && !isAtOrAfter(this.freshAt, seenLastTick)) await this.refresh(everything);
    } finally {
      this.ticking = false;
    }
  }

  private refresh(scope: RefreshScope): Promise<void> {
    this.queued = mergeScopes(this.queued, scope, this.options.entriesMax);
    return this.refreshing ?? this.startQueued();
  }

  private startQueued(): Promise<void> {
    const scope = this.queued;
    assert(scope !== undefined && this.refreshing === undefined, "one refresh at a time, of what is queued");
    this.queued = undefined;
    const refreshing = this.refreshOnce(scope).finally(() => {
      this.refreshing = undefined;
      if (this.queued !== undefined) this.startQueued().catch(this.options.onRefreshError);
    });
    this.refreshing = refreshing;
    return refreshing;
  }

  private async refreshOnce(scope: RefreshScope): Promise<void> {
    // A batch beginning after what this copy has seen leaves a hole: what happened in it is unknown.
    const change = scope !== everything && isAtOrAfter(this.freshAt, scope.from) ? scope : undefined;
    if (change && isAtOrAfter(this.freshAt, change.to)) return;
    if (!change) this.dropIdle();
    const keysChanged = change ? (change.keysChanged ?? change.touched) : undefined;
    const keyHashes = keysChanged ? this.keysOf(keysChanged) : [...this.entries.keys()];
    // Of the other touched accounts only the funds moved: one key of each is read for them, and its funds go
    // to the account's other entries as they are now.
    const fundsMoved = change
      ? [...change.touched].filter((account) => !keysChanged!.has(account) && this.keysByAccount.has(account))
      : [];
    const fundsCarriers = fundsMoved.map((account) => {
      const [carrier, ...others] = this.keysByAccount.get(account)!;
      return { account, carrier: carrier!, others: others.map((keyHash) => this.entries.get(keyHash)!) };
    });
    if (change && keyHashes.length === 0 && fundsCarriers.length === 0) {
      this.freshAt = change.to;
      return;
    }
    const snapshot = await this.options.read([...keyHashes, ...fundsCarriers.map(({ carrier }) => carrier)]);
    for (const keyHash of keyHashes) {
      const entry = this.entries.get(keyHash);
      const record = snapshot.records.get(keyHash);
      if (!record) this.remove(keyHash);
      else if (entry) {
        assert(accountNameOf(record.owner) === entry.account, "a key never changes owner");
        entry.record = record;
        entry.readAt = snapshot.position;
      }
    }
    const reached =
      change && compareLogPositions(change.to, snapshot.position) < 0 ? change.to : snapshot.position;
    for (const { account, carrier, others } of fundsCarriers) {
      const record = snapshot.records.get(carrier);
      if (!record) {
        // The carrier gone (revoked by a later batch, whose notification will follow): no funds were read
        // for its account, so its entries go, to be read again when next used.
        for (const keyHash of [...(this.keysByAccount.get(account) ?? [])]) this.remove(keyHash);
        continue;
      }
      assert(accountNameOf(record.owner) === account, "a key never changes owner");
      const carrierEntry = this.entries.get(carrier);
      if (carrierEntry) {
        carrierEntry.record = record;
        carrierEntry.readAt = snapshot.position;
      }
      const funds = { hasCredit: record.hasCredit, availableWon: record.availableWon };
      for (const entry of others) {
        // An entry dropped meanwhile, or replaced by a read of its own, is not one to update.
        if (this.entries.get(entry.record.keyHash) !== entry) continue;
        // Its key unchanged up to `to`, its funds read now: fresh up to where the read counts.
        entry.record = { ...entry.record, ...funds };
        entry.readAt = reached;
      }
    }
    // Every entry not re-read is unchanged up to `to` (after a partial read) — unless it was added while the
    // read was in flight, by a read of its own that may be older: if so, and it is one the read was for (any
    // after a full read, the touched accounts' after a partial one), drop it.
    for (const keyHash of change ? this.keysOf(change.touched) : [...this.entries.keys()]) {
      if (compareLogPositions(this.entries.get(keyHash)!.readAt, reached) < 0) this.remove(keyHash);
    }
    if (compareLogPositions(reached, this.freshAt) > 0) this.freshAt = reached;
  }

  private keysOf(accounts: ReadonlySet<string>): string[] {
    const keyHashes: string[] = [];
    for (const account of accounts) keyHashes.push(...(this.keysByAccount.get(account) ?? []));
    return keyHashes;
  }

  /** At a full refresh and at each tick: a partial refresh costs what its batch touched, never the cache size. */
  private dropIdle(): void {
    const idleSince = this.nowMs() - this.options.idleMs;
    for (const [keyHash, entry] of this.entries) {
      if (entry.lastUsedAtMs < idleSince) this.remove(keyHash);
    }
  }

  private add(keyHash: string, entry: Omit<Entry, "lastUsedAtMs">): void {
    this.entries.set(keyHash, { ...entry, lastUsedAtMs: this.nowMs() });
    const keyHashes = this.keysByAccount.get(entry.account);
    if (keyHashes) keyHashes.add(keyHash);
    else this.keysByAccount.set(entry.account, new Set([keyHash]));
  }

  private remove(keyHash: string): void {
    const entry = this.entries.get(keyHash);
    if (!entry) return;
    this.entries.delete(keyHash);
    const keyHashes = this.keysByAccount.get(entry.account)!;
    keyHashes.delete(keyHash);
    if (keyHashes.size === 0) this.keysByAccount.delete(entry.account);
  }
}

/**
 * Two notifications' work as one read. Their batches must overlap or follow each other: a hole between
 * them holds events nobody named. More accounts than the cache holds keys makes a full read no dearer.
 */
function mergeScopes(
  queued: RefreshScope | undefined,
  next: RefreshScope,
  accountsMax: number,
): RefreshScope {
  if (queued === undefined) return next;
  if (queued === everything || next === everything) return everything;
  const joined = isAtOrAfter(queued.to, next.from) && isAtOrAfter(next.to, queued.from);
  if (!joined) return everything;
  const touched = new Set([...queued.touched, ...next.touched]);
  if (touched.size > accountsMax) return everything;
  // Either one silent on whose keys changed: any touched account's may have.
  const keysChanged =
    queued.keysChanged && next.keysChanged
      ? new Set([...queued.keysChanged, ...next.keysChanged])
      : undefined;
  return {
    from: compareLogPositions(queued.from, next.from) < 0 ? queued.from : next.from,
    to: compareLogPositions(queued.to, next.to) > 0 ? queued.to : next.to,
    touched,
    ...(keysChanged ? { keysChanged } : {}),
  };
}
