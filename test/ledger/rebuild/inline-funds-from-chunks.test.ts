import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import type { EventData } from "../../../src/ledger/events";
import { rebuildProjections } from "../../../src/ledger/ledger-maintenance";
import type { EventToAppend } from "../../../src/ledger/store/event-store";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { metadata, topUp, usageCharge } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * A rebuild in SQL folds the accounts' funds and each key's spend from its parsed chunks, and the events
 * after them from the log. Every event here is its own transaction, so a rebuild in chunks of one event
 * puts a void in a later chunk than the authorization that names its key and month.
 */

const account = { kind: "user", id: "lee" } as const;
const voidedKey = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";
const chargedKey = "8e2f3a4b-5c6d-4e7f-9081-92a3b4c5d6e7";
// 2026-01-31T15:30Z is 2026-02-01 00:30 in Seoul: the void's spend belongs to February.
const voidedStart = "2026-01-31T15:30:00.000Z";
const chargedStart = "2026-11-20T02:00:00.000Z";

/** What a request's hold and its usage both say of it. */
function request(requestId: string, keyId: string, startedAt: string) {
  return {
    requestId,
    keyId,
    account,
    userId: "lee",
    organizationId: null,
    model: "alpha-5.4",
    endpoint: "chat.completions" as const,
    streamed: false,
    startedAt,
  };
}

function authorized(requestId: string, keyId: string, startedAt: string, holdWon: string): EventToAppend {
  const data: EventData<"UsageAuthorized"> = {
    ...request(requestId, keyId, startedAt),
    holdWon,
    estimate: { inputTokensMax: 10, outputTokensMax: 10, estimatedWon: holdWon },
    gatewayInstance: "gateway-test",
    expiresAt: startedAt,
  };
  return { eventId: randomUUID(), event: { type: "UsageAuthorized", data, metadata: metadata() } };
}

function recorded(requestId: string, keyId: string, startedAt: string, heldWon: string, pendingWon: string) {
  const data: EventData<"UsageRecorded"> = {
    ...request(requestId, keyId, startedAt),
    outcome: "completed",
    tokens: { input: 10, cached: null, output: 5, reasoning: null },
    usageSource: "upstream",
    heldWon,
    pendingWon,
    corrects: null,
    attempts: null,
  };
  return { eventId: randomUUID(), event: { type: "UsageRecorded" as const, data, metadata: metadata() } };
}

describe("a rebuild in SQL folding the inline funds from its chunks", () => {
  let harness: LedgerHarness;
  const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });

  beforeAll(async () => {
    harness = await openLedgerHarness("inline_chunks");
    const append = (streamId: string, event: EventToAppend) =>
      harness.append({ streamId, expectedVersion: "any", events: [event] });
    await append("account-user-lee", topUp("lee", "100", "t"));
    // Held, then voided in a later transaction, as a release before hold rows logged them.
    await append("usage-req_voided", authorized("req_voided", voidedKey, voidedStart, "10"));
    // Held, recorded and charged, each in a transaction of its own.
    await append("usage-req_charged", authorized("req_charged", chargedKey, chargedStart, "5"));
    await append("usage-req_voided", {
      eventId: randomUUID(),
      event: {
        type: "UsageVoided",
        data: { requestId: "req_voided", account, releasedWon: "10", reason: "upstream-failed" },
        metadata: metadata(),
      },
    });
    await append("usage-req_charged", recorded("req_charged", chargedKey, chargedStart, "5", "3.5"));
    const charge = usageCharge(account, "req_charged", chargedStart, "3.5");
    const charged = charge.events[0]!.event as Extract<EventToAppend["event"], { type: "UsageCharged" }>;
    await append("usage-req_charged", {
      eventId: randomUUID(),
      event: { ...charged, data: { ...charged.data, keyId: chargedKey, releasedPendingWon: "3.5" } },
    });
    // Still open: held and not settled.
    await append("usage-req_open", authorized("req_open", chargedKey, chargedStart, "2"));
    await harness.project();
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given the inline tables wiped, then a rebuild in chunks of one event restores them as the log's fold", async () => {
    await harness.ledger.pool.query("UPDATE account_funds_settled SET balance_won = 0, held_won = 0");
    await harness.ledger.pool.query("DELETE FROM key_spend_settled");
    expect(await verifyProjections(context())).not.toEqual([]);

    await rebuildProjections(context(), { fold: "sql", batchSizeMax: 1_000, chunkEventsMax: 1 });

    expect(await verifyProjections(context())).toEqual([]);
    const funds = await harness.ledger.pool.query(
      `SELECT trim_scale(balance_won)::text AS balance, trim_scale(held_won)::text AS held,
              trim_scale(pending_won)::text AS pending
       FROM account_funds WHERE account_kind = 'user' AND account_id = 'lee'`,
    );
    expect(funds.rows).toEqual([{ balance: "96.5", held: "2", pending: "0" }]);
    const spend = await harness.ledger.pool.query(
      `SELECT key_id::text, month, trim_scale(held_won)::text AS held, trim_scale(charged_won)::text AS charged
       FROM key_spend ORDER BY key_id, month`,
    );
    expect(spend.rows).toEqual([
      { key_id: voidedKey, month: "2026-02", held: "0", charged: "0" },
      { key_id: chargedKey, month: "2026-11", held: "2", charged: "3.5" },
    ]);
  });
});
