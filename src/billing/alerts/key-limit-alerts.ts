import type pg from "pg";
import type { Logger } from "pino";
import { webhookLimits } from "../../kernel/limits";
import { seoulDateOf, startOfNextSeoulMonth } from "../../kernel/seoul-calendar";
import type { AccountReference } from "../../ledger/events";
import type { KeyLimitKind } from "../holds/hold-refusal";
import { readKeyNames } from "../read-models/key-names";
import { enqueueAlert } from "./webhook-outbox";

/**
 * `key.limit_reached` (C14): at most once per key and window, where the window is the one the refused limit
 * counts in: the minute for the rate limit, the Seoul month for the monthly spend limit, the key's lifetime for
 * the total one. A refusal is only noted on the request path (a bounded in-memory queue, nothing awaited); a
 * timer writes the queue to the outbox in batches, keyed `${keyId}:${window}` so that the outbox holds at most
 * one message per endpoint, key and window across processes. A failed write is logged and counted, never the
 * request's failure; when the queue is full, a refusal is dropped and counted.
 */

export interface KeyLimitRefused {
  keyId: string;
  account: AccountReference;
  limit: { kind: KeyLimitKind; value: string };
  at: Date;
}

const minuteMs = 60_000;

/** The window a refusal of `kind` at `at` falls in, and when it is over (null: never, the key's lifetime). */
export function keyLimitWindowOf(kind: KeyLimitKind, at: Date): { window: string; resetsAt: Date | null } {
  switch (kind) {
    case "rate": {
      const start = at.getTime() - (at.getTime() % minuteMs);
      return {
        window: `rate:${new Date(start).toISOString().slice(0, 16)}`,
        resetsAt: new Date(start + minuteMs),
      };
    }
    case "monthly-spend":
      return { window: `monthly-spend:${seoulDateOf(at).slice(0, 7)}`, resetsAt: startOfNextSeoulMonth(at) };
    case "total-spend":
      return { window: "total-spend", resetsAt: null };
    default: {
      const unreachable: never = kind;
      throw new Error(`unknown key limit ${String(unreachable)}`);
    }
  }
}

export interface KeyLimitAlertsOptions {
  database: Pick<pg.Pool, "query">;
  logger: Logger;
  queueMax?: number;
  batchMax?: number;
  flushIntervalMs?: number;
}

export class KeyLimitAlerts {
  /** Refusals to write, by dedupe key (a second refusal in the same window adds nothing). */
  private readonly queue = new Map<string, KeyLimitRefused>();
  /** Dedupe keys this process wrote already (bounded: a hint that saves a statement, the outbox decides). */
  private readonly written = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<number> = Promise.resolve(0);
  dropped = 0;
  failed = 0;

  constructor(private readonly options: KeyLimitAlertsOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      void this.flush();
    }, this.options.flushIntervalMs ?? webhookLimits.keyLimitAlertFlushIntervalMs);
    this.timer.unref();
  }

  /** Notes a refusal; never throws, never waits. */
  noted(refusal: KeyLimitRefused): void {
    const dedupeKey = `${refusal.keyId}:${keyLimitWindowOf(refusal.limit.kind, refusal.at).window}`;
    if (this.written.has(dedupeKey) || this.queue.has(dedupeKey)) return;
    if (this.queue.size >= (this.options.queueMax ?? webhookLimits.keyLimitAlertQueueMax)) {
      this.dropped++;
      return;
    }
    this.queue.set(dedupeKey, refusal);
  }

  /** Writes up to one batch of the queue to the outbox (one flush at a time); answers the refusals written. */
  flush(): Promise<number> {
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    while (this.queue.size > 0 && (await this.flush()) > 0);
  }

  private async writeBatch(): Promise<number> {
    const batch = [...this.queue].slice(0, this.options.batchMax ?? webhookLimits.keyLimitAlertBatchMax);
    for (const [dedupeKey] of batch) this.queue.delete(dedupeKey);
    // A name is a nicety: without it (the read failed), the alerts go out with keyName null.
    const names = await readKeyNames(
      this.options.database,
      batch.map(([, refusal]) => refusal.keyId),
    ).catch(() => new Map<string, string>());
    const results = await Promise.allSettled(
      batch.map(([dedupeKey, refusal]) => this.write(dedupeKey, refusal, names.get(refusal.keyId) ?? null)),
    );
    let written = 0;
    results.forEach((result, index) => {
      if (result.status === "fulfilled") {
        written++;
        return;
      }
      this.failed++;
      this.options.logger.warn(
        { err: result.reason, dedupeKey: batch[index]?.[0] },
        "webhooks: writing a key.limit_reached alert failed",
      );
    });
    return written;
  }

  private async write(dedupeKey: string, refusal: KeyLimitRefused, keyName: string | null): Promise<void> {
    const { resetsAt } = keyLimitWindowOf(refusal.limit.kind, refusal.at);
    await enqueueAlert(this.options.database, {
      account: refusal.account,
      type: "key.limit_reached",
      at: refusal.at,
      dedupeKey,
      data: {
        account: refusal.account,
        keyId: refusal.keyId,
        keyName,
        limit: refusal.limit.kind,
        limitValue: refusal.limit.value,
        resetsAt: resetsAt?.toISOString() ?? null,
      },
    });
    if (this.written.size >= webhookLimits.keyLimitAlertsRememberedMax) this.written.clear();
    this.written.add(dedupeKey);
  }
}
