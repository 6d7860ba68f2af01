import { describe, expect, it } from "vitest";
import { usageByDayProjection, usageByDayTable } from "../../projections/usage-by-day";
import type { UsageTokens } from "../../src/ledger/events";
import { MemoryRows } from "../../src/ledger/projection/projection";
import type { RecordedEvent } from "../../src/ledger/store/event-store";
import { parseLogPosition } from "../../src/ledger/store/log-position";

/** The console's usage charts read this fold: charged usage per Seoul day × account × model × key. */

const keyA = "6f1c2a4e-8d3b-4f5a-9c7e-1b2d3e4f5a6b";
const keyB = "7a2d3b5f-9e4c-4a6b-8d8f-2c3e4f5a6b7c";
let sequence = 0;

function usageCharged(options: {
  startedAt: string;
  amountWon: string;
  keyId?: string;
  model?: string;
  account?: { kind: "user" | "organization"; id: string };
  tokens?: UsageTokens;
}): RecordedEvent {
  sequence += 1;
  const tokens = options.tokens ?? { input: 100, cached: 20, output: 50, reasoning: null };
  return {
    type: "UsageCharged",
    data: {
      requestId: `req_${sequence}`,
      keyId: options.keyId ?? keyA,
      account: options.account ?? { kind: "user", id: "mina" },
      model: options.model ?? "alpha-5.4-mini",
      endpoint: "chat.completions",
      startedAt: options.startedAt,
      amountWon: options.amountWon,
      breakdown: {
        tokens,
        inputUsdPerMillionTokens: "0.25",
        cachedInputUsdPerMillionTokens: "0.025",
        outputUsdPerMillionTokens: "2",
        usd: "0.0001",
        fxRateKrwPerUsd: "1400",
        fxRateDate: "2026-11-22",
        discountRate: "0",
        amountWon: options.amountWon,
        usageSource: "upstream",
      },
    },
    metadata: { actor: "system:reconciler", occurredAt: options.startedAt },
    eventId: `00000000-0000-4000-8000-${String(sequence).padStart(12, "0")}`,
    streamId: `usage-req_${sequence}`,
    streamVersion: 1,
    position: parseLogPosition(`1-${sequence}`),
    recordedAt: new Date(options.startedAt),
  } as RecordedEvent;
}

function fold(events: RecordedEvent[]): MemoryRows {
  const rows = new MemoryRows();
  for (const event of events) usageByDayProjection.evolve(rows, event);
  return rows;
}

describe("usage-by-day projection", () => {
  it("sums charges of one Seoul day, model and key exactly, not-reported tokens adding nothing", () => {
    // Given two charges on 2026-11-23 in Seoul (one just after midnight KST, which is still 11-22 in UTC)
    const rows = fold([
      usageCharged({ startedAt: "2026-11-22T15:00:00.000Z", amountWon: "0.1" }),
      usageCharged({
        startedAt: "2026-11-23T14:59:59.999Z",
        amountWon: "0.2",
        tokens: { input: 1, cached: null, output: 2, reasoning: 1 },
      }),
    ]);

    // Then one row with exact sums
    expect(rows.rowsOf(usageByDayTable)).toEqual([
      {
        day: "2026-11-23",
        account_kind: "user",
        account_id: "mina",
        model: "alpha-5.4-mini",
        key_id: keyA,
        requests: "2",
        amount_won: "0.3",
        input_tokens: "101",
        cached_tokens: "20",
        output_tokens: "52",
        reasoning_tokens: "1",
      },
    ]);
  });

  it("keeps days, keys, models and accounts apart", () => {
    const rows = fold([
      usageCharged({ startedAt: "2026-11-22T14:59:59.999Z", amountWon: "1" }),
      usageCharged({ startedAt: "2026-11-22T15:00:00.000Z", amountWon: "1" }),
      usageCharged({ startedAt: "2026-11-22T15:00:00.000Z", amountWon: "1", keyId: keyB }),
      usageCharged({ startedAt: "2026-11-22T15:00:00.000Z", amountWon: "1", model: "beta-3-flash" }),
      usageCharged({
        startedAt: "2026-11-22T15:00:00.000Z",
        amountWon: "1",
        account: { kind: "organization", id: "acme" },
      }),
    ]);
    const keys = rows
      .rowsOf(usageByDayTable)
      .map(
        (row) =>
          `${row.day} ${row.account_kind}:${row.account_id} ${row.model} ${row.key_id === keyA ? "A" : "B"}`,
      )
      .sort();
    expect(keys).toEqual([
      "2026-11-22 user:mina alpha-5.4-mini A",
      "2026-11-23 organization:acme alpha-5.4-mini A",
      "2026-11-23 user:mina alpha-5.4-mini A",
      "2026-11-23 user:mina alpha-5.4-mini B",
      "2026-11-23 user:mina beta-3-flash A",
    ]);
  });
});
