import { randomUUID } from "node:crypto";
import pino from "pino";
import { allProjections } from "../../projections";
import { formatMoney, parseMoney } from "../../src/kernel/money";
import {
  type AccountReference,
  accountsTouchedBy,
  accountsWithKeysChangedBy,
  type EventData,
  type LedgerEvent,
} from "../../src/ledger/events";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import { ProjectionWaiter } from "../../src/ledger/projection/projection-waiter";
import type { StreamAppend } from "../../src/ledger/store/event-store";
import { isAtOrAfter, type LogPosition } from "../../src/ledger/store/log-position";
import type { LedgerHarness } from "../support/ledger-harness";

/** Given-events for billing tests: each builds one append with the instant it happened at. */

export const silentLogger = pino({ level: "silent" });

export const keyId = "6f1c2a4e-8d3b-4f5a-9c7e-1b2d3e4f5a6b";

function on(streamId: string, event: LedgerEvent, eventId: string = randomUUID()): StreamAppend {
  return { streamId, expectedVersion: "any", events: [{ eventId, event }] };
}

export function modelPriceSet(
  model: string,
  prices: { input: string; cachedInput: string; output: string },
  occurredAt: string,
): StreamAppend {
  return on(`model-price-${model}`, {
    type: "ModelPriceSet",
    data: {
      model,
      inputUsdPerMillionTokens: prices.input,
      cachedInputUsdPerMillionTokens: prices.cachedInput,
      outputUsdPerMillionTokens: prices.output,
    },
    metadata: { actor: "admin", occurredAt },
  });
}

export function discountSet(
  model: string | null,
  organizationId: string | null,
  rate: string,
  occurredAt: string,
): StreamAppend {
  return on(`discount-${model ?? "*"}:${organizationId ?? "*"}`, {
    type: "DiscountSet",
    data: { model, organizationId, rate },
    metadata: { actor: "admin", occurredAt },
  });
}

export function fxRateUpdated(
  rate: {
    appliesOn: string;
    rateDate: string;
    rateKrwPerUsd: string;
    source?: "koreaexim" | "admin" | "default";
  },
  occurredAt: string,
): StreamAppend {
  return on(`fx-rate-${rate.appliesOn}`, {
    type: "FxRateUpdated",
    data: { source: "admin", ...rate },
    metadata: { actor: "admin", occurredAt },
  });
}

export function creditToppedUp(
  account: AccountReference,
  amountWon: string,
  occurredAt: string,
): StreamAppend {
  return on(`account-${account.kind}-${account.id}`, {
    type: "CreditToppedUp",
    data: { account, amountWon, reference: "test" },
    metadata: { actor: "admin", occurredAt },
  });
}

export interface UsageOptions {
  requestId: string;
  account: AccountReference;
  model?: string;
  tokens?: EventData<"UsageRecorded">["tokens"];
  startedAt: string;
  recordedAt?: string;
  usageSource?: "upstream" | "estimated";
  /** The hold the usage releases and its cost as recorded (v2); absent: a v1 record, which has neither. */
  heldWon?: string;
  pendingWon?: string;
}

export function usageRecorded(options: UsageOptions): StreamAppend {
  const organizationId = options.account.kind === "organization" ? options.account.id : null;
  return {
    streamId: `usage-${options.requestId}`,
    expectedVersion: "no-stream",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "UsageRecorded",
          data: {
            requestId: options.requestId,
            keyId,
            account: options.account,
            userId: options.account.kind === "user" ? options.account.id : "member",
            organizationId,
            model: options.model ?? "alpha-5.4",
            endpoint: "chat.completions",
            streamed: false,
            outcome: "completed",
            tokens: options.tokens ?? { input: 1_000, cached: 0, output: 500, reasoning: 0 },
            usageSource: options.usageSource ?? "upstream",
            startedAt: options.startedAt,
            ...(options.heldWon === undefined ? {} : { heldWon: options.heldWon }),
            ...(options.pendingWon === undefined ? {} : { pendingWon: options.pendingWon }),
          },
          metadata: {
            actor: `key:${keyId}`,
            correlationId: options.requestId,
            occurredAt: options.recordedAt ?? options.startedAt,
          },
        },
      },
    ],
  };
}

/** The projection runner running live, as in the service (its notifications name what a batch touched). */
export function runProjectionRunner(harness: LedgerHarness): { stop(): Promise<void> } {
  const runner = new ProjectionRunner({
    pool: harness.ledger.pool,
    connectionString: harness.database.url,
    store: harness.store,
    projections: allProjections,
    batchSizeMax: 1_000,
    standbyRetryMs: 50,
    touchedBy: accountsTouchedBy,
    keysChangedBy: accountsWithKeysChangedBy,
  });
  const stopping = new AbortController();
  const running = runner.run(stopping.signal);
  return {
    stop: async () => {
      stopping.abort();
      await running;
    },
  };
}

/** The projections running live, as in the service: for tests whose code waits on them. */
export async function runProjections(harness: LedgerHarness): Promise<{
  waiter: ProjectionWaiter;
  stop(): Promise<void>;
}> {
  const runner = runProjectionRunner(harness);
  const waiter = new ProjectionWaiter(harness.ledger.pool, harness.database.url, 20);
  await waiter.start();
  return {
    waiter,
    stop: async () => {
      await runner.stop();
      await waiter.close();
    },
  };
}

/**
 * `harness.project()` only knows what was appended through the harness; events the code under test
 * appended itself (charges) are applied by projecting until every projection has passed `position`.
 */
export async function projectThrough(harness: LedgerHarness, position: LogPosition): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt += 1) {
    await harness.project();
    if (isAtOrAfter(harness.runner.lowestCheckpoint(), position)) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("projections did not reach the position");
}

/** The UsageCharged events of one request, read from the log. */
export async function chargesOf(harness: LedgerHarness, requestId: string) {
  const stream = await harness.store.readStream(`usage-${requestId}`);
  return stream.filter((event) => event.type === "UsageCharged");
}

export async function balanceOf(
  harness: LedgerHarness,
  account: AccountReference,
): Promise<string | undefined> {
  const result = await harness.ledger.pool.query<{ balance_won: string }>(
    "SELECT balance_won::text AS balance_won FROM projection_balances WHERE account_kind = $1 AND account_id = $2",
    [account.kind, account.id],
  );
  const balance = result.rows[0]?.balance_won;
  // Canonical form ("98.5"), whatever scale the numeric column carries.
  return balance === undefined ? undefined : formatMoney(parseMoney(balance));
}
