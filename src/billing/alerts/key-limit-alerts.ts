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
 * counts in: the minute for the rate limit, the Seoul month for the monthly spend limit, the key's lifetime
 * for the total one — each value the limit is set to opening a window of its own, so a limit raised and
 * reached again is told to its owner again. The first refusal of a key's window in this process writes its
 * alert to the outbox before the refusal is answered, so no crash of the gateway can lose it (at least once,
 * as every webhook); later refusals of that window wait for that same write or, once it is done, for
 * nothing. The outbox's dedupe key `${keyId}:${window}:${limitValue}` keeps one message per endpoint, key and
 * window across processes. A failed write is logged and counted, never the request's failure (the next
 * refusal of the window tries again); past `keyLimitAlertWritesInFlightMax` writes at once a refusal's alert
 * is dropped and counted.
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
  writesInFlightMax?: number;
}

export class KeyLimitAlerts {
  /** Writes in flight, by dedupe key: every refusal of that window waits for the same one. */
  private readonly writing = new Map<string, Promise<void>>();
  /** Dedupe keys this process wrote already (bounded: a hint that saves a statement, the outbox decides). */
  private readonly written = new Set<string>();
  dropped = 0;
  failed = 0;

  constructor(private readonly options: KeyLimitAlertsOptions) {}

  /** Settles once the refusal's alert is in the outbox (or its write failed, logged); never rejects. */
  noted(refusal: KeyLimitRefused): Promise<void> {
    const { window } = keyLimitWindowOf(refusal.limit.kind, refusal.at);
    const dedupeKey = `${refusal.keyId}:${window}:${refusal.limit.value}`;
    if (this.written.has(dedupeKey)) return Promise.resolve();
    const inFlight = this.writing.get(dedupeKey);
    if (inFlight) return inFlight;
    if (
      this.writing.size >= (this.options.writesInFlightMax ?? webhookLimits.keyLimitAlertWritesInFlightMax)
    ) {
      this.dropped++;
      return Promise.resolve();
    }
    const write = this.write(dedupeKey, refusal)
      .catch((error: unknown) => {
        this.failed++;
        this.options.logger.warn(
          { err: error, dedupeKey },
          "webhooks: writing a key.limit_reached alert failed",
        );
      })
      .finally(() => this.writing.delete(dedupeKey));
    this.writing.set(dedupeKey, write);
    return write;
  }

  /** Waits for the writes in flight. */
  async close(): Promise<void> {
    await Promise.all(this.writing.values());
  }

  private async write(dedupeKey: string, refusal: KeyLimitRefused): Promise<void> {
    const { resetsAt } = keyLimitWindowOf(refusal.limit.kind, refusal.at);
    // A name is a nicety: without it (the read failed), the alert goes out with keyName null.
    const names = await readKeyNames(this.options.database, [refusal.keyId]).catch(
      () => new Map<string, string>(),
    );
    await enqueueAlert(this.options.database, {
      account: refusal.account,
      type: "key.limit_reached",
      at: refusal.at,
      dedupeKey,
      data: {
        account: refusal.account,
        keyId: refusal.keyId,
        keyName: names.get(refusal.keyId) ?? null,
        limit: refusal.limit.kind,
        limitValue: refusal.limit.value,
        resetsAt: resetsAt?.toISOString() ?? null,
      },
    });
    if (this.written.size >= webhookLimits.keyLimitAlertsRememberedMax) this.written.clear();
    this.written.add(dedupeKey);
  }
}
