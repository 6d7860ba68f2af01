import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowEventOf } from "../../../src/billing/holds/hold-row-completion";
import type { UsageAuthorizationRequest } from "../../../src/billing/holds/usage-authorizations";
import { requestHoldsMigration } from "../../../src/database/migrations/0017-request-holds";
import { narrowHoldRowsMigration } from "../../../src/database/migrations/0019-narrow-hold-rows";
import { parseLedgerEvent } from "../../../src/ledger/events";
import { ledgerHoldAuthorizationFunction } from "../../../src/ledger/schema/holds/ledger-hold-authorization";
import { createTestDatabase, type TestDatabase } from "../../support/database";
import { metadata } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { holdRowCompletionOf, logSettledHolds } from "../../support/settled-holds";
import { usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * A hold row keeps its authorization as columns, and the log writer builds the `UsageAuthorized` it appends
 * from them: the event must be the one the gateway validated, with the statement's grant in it, and a row an
 * earlier release kept whole must be logged with the very event it kept.
 */

const account = { kind: "organization" as const, id: "원-columns" };

function holdOf(requestId: string): UsageAuthorizationRequest {
  return {
    eventId: randomUUID(),
    data: {
      requestId,
      keyId: randomUUID(),
      account,
      userId: null,
      organizationId: account.id,
      model: "alpha-5.4-mini",
      endpoint: "responses",
      streamed: true,
      startedAt: "2026-11-28T14:59:59.999Z",
      estimate: { inputTokensMax: 12_345, outputTokensMax: 678, estimatedWon: "9.100000" },
      gatewayInstance: 'gateway "둘째" \\ 2',
      expiresAt: "2026-11-28T15:09:59.999Z",
    },
  };
}

describe("a hold row's authorization", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("hold_row_authorization");
    await harness.append({
      streamId: `account-organization-${account.id}`,
      expectedVersion: "no-stream",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "CreditToppedUp",
            data: { account, amountWon: "5", reference: "less than one estimate" },
            metadata: metadata(),
          },
        },
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("is logged as the event the gateway validated, with the grant's amount and time", async () => {
    const hold = holdOf(`req_columns_${randomUUID()}`);
    const [decision] = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage(
      [hold],
      {
        waitForFlush: true,
      },
    );
    // Cut to what was available: the granted amount, not the estimate, is the event's.
    expect(decision).toMatchObject({ kind: "held", holdWon: "5" });
    const placed = await harness.ledger.pool.query<{ placed_at: string }>(
      `SELECT to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS placed_at
       FROM request_holds WHERE request_id = $1`,
      [hold.data.requestId],
    );
    await holdRowCompletionOf(harness.ledger.pool).complete({
      requestId: hold.data.requestId,
      settlement: rowEventOf(randomUUID(), {
        type: "UsageVoided",
        data: { requestId: hold.data.requestId, account, releasedWon: "5", reason: "shutdown" },
        metadata: {
          actor: `key:${hold.data.keyId}`,
          correlationId: hold.data.requestId,
          occurredAt: new Date().toISOString(),
        },
      }),
      pendingWon: "0",
    });
    await logSettledHolds(harness.ledger.pool, harness.store);

    const [logged] = await harness.store.readStream(`usage-${hold.data.requestId}`);
    expect(logged).toMatchObject({ eventId: hold.eventId, type: "UsageAuthorized", streamVersion: 0 });
    expect(logged!.data).toEqual({ ...hold.data, holdWon: "5" });
    expect(logged!.metadata).toEqual({
      actor: `key:${hold.data.keyId}`,
      correlationId: hold.data.requestId,
      occurredAt: placed.rows[0]!.placed_at,
    });
    expect(() => parseLedgerEvent(logged!)).not.toThrow();
  });
});

describe("migration 19", () => {
  let database: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    database = await createTestDatabase("narrow_hold_rows");
    pool = new pg.Pool({ connectionString: database.url, max: 1 });
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("gives a row an earlier release kept whole the columns its event is built from again, unchanged", async () => {
    // Given the table as migration 17 made it, with a settled row whose authorization it kept whole
    await pool.query(requestHoldsMigration.sql);
    const kept = {
      eventId: randomUUID(),
      type: "UsageAuthorized",
      schemaVersion: 1,
      data: {
        ...holdOf("req_kept_whole").data,
        userId: "누리",
        holdWon: "4.5",
      },
      metadata: {
        actor: "",
        correlationId: "req_kept_whole",
        occurredAt: "2026-11-28T14:59:59.321Z",
      },
    };
    kept.metadata.actor = `key:${kept.data.keyId}`;
    await pool.query(
      `INSERT INTO request_holds (request_id, account_kind, account_id, key_id, month, hold_won, gateway_instance,
         placed_at, expires_at, authorization_event, settlement_event, pending_won, settled_at)
       VALUES ($1, $2, $3, $4, '2026-11', 4.5, $5, $6, $7, $8, '{}', 0, now())`,
      [
        "req_kept_whole",
        account.kind,
        account.id,
        kept.data.keyId,
        kept.data.gatewayInstance,
        kept.metadata.occurredAt,
        kept.data.expiresAt,
        JSON.stringify(kept),
      ],
    );

    // When migration 19 runs
    await pool.query(narrowHoldRowsMigration.sql);
    await pool.query(ledgerHoldAuthorizationFunction.sql);

    // Then the event built from its columns is the event it kept
    const built = await pool.query<{ event: unknown }>(
      "SELECT ledger_hold_authorization(holds) AS event FROM request_holds holds",
    );
    expect(built.rows).toEqual([{ event: kept }]);
  });
});
