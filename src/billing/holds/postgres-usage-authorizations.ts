import type pg from "pg";
import { isLockNotAvailable, lockTimeoutSettingOf } from "../../database/lock-wait";
import { assert } from "../../kernel/assert";
import { limits } from "../../kernel/limits";
import { entriesAllowing } from "../../keys/allowed-models";
import { schemaVersionOf } from "../../ledger/events";
import { findModel } from "../../providers/catalog";
import { assertHoldWithinFunds, assertRefusedForFunds } from "../money-invariants";
import {
  AccountRowsLockedError,
  type UsageAuthorizationDecision,
  type UsageAuthorizationRequest,
  type UsageAuthorizations,
  type UsageRefusalReason,
} from "./usage-authorizations";

/**
 * Holds behind their own port (C10): `UsageAuthorizations` (usage-authorizations.ts) is billing's, and this
 * is its PostgreSQL implementation. It calls `ledger_authorize_usage` (declared in
 * src/ledger/schema/holds/ledger-authorize-usage.ts), which decides against the funds and key limits — the
 * log's inline folds and the hold rows not yet logged — and inserts each granted hold's row in the same
 * statement. It needs the log in the same PostgreSQL database, so the service runs on the PostgreSQL event
 * store (EventStoreDB cannot take part in that transaction: main.ts refuses it for the service's roles).
 */

export class PostgresUsageAuthorizations implements UsageAuthorizations {
  /** `lockWaitMs`: how long a statement waits for its accounts' rows before it gives up (`lock_timeout`). */
  constructor(
    private readonly pool: Pick<pg.Pool, "query">,
    private readonly lockWaitMs: number = limits.holdLockWaitMs,
  ) {}

  /**
   * Places holds (C10): each request's hold row is inserted if the account has at least ₩1 available, in one
   * statement for the whole batch (`ledger_authorize_usage`).
   */
  async authorizeUsage(
    requests: readonly UsageAuthorizationRequest[],
    commit: { waitForFlush: boolean } = { waitForFlush: true },
  ): Promise<UsageAuthorizationDecision[]> {
    if (requests.length === 0) return [];
    const result = await this.pool
      .query<AuthorizationRow>({
        name: "ledger-authorize-usage",
        // The statement is its own transaction, so a transaction-local setting made in it governs its commit.
        // Holds whose answer waits for a later synchronous commit need not wait for this one's flush: the
        // WAL is flushed in order, so that later commit makes them durable too (see HoldAuthorizer).
        // The lock wait must be set before the function locks: the function takes its input from the row
        // that sets it (a subquery with volatile calls is never merged into the query around it).
        text: `SELECT authorized.* FROM
                 (SELECT $1::json AS requests, set_config('synchronous_commit', $2, true),
                         set_config('lock_timeout', $3, true)) settings,
                 LATERAL ledger_authorize_usage(settings.requests) authorized`,
        values: [
          JSON.stringify(requests.map(holdStatementInputOf)),
          commit.waitForFlush ? "on" : "off",
          lockTimeoutSettingOf(this.lockWaitMs),
        ],
      })
      .catch((error: unknown) => {
        if (isLockNotAvailable(error))
          throw new AccountRowsLockedError(`a hold waited ${this.lockWaitMs} ms for an account's row`, {
            cause: error,
          });
        throw error;
      });
    // Decisions are matched to requests by place: one row per request, in order, or a hold goes to another.
    assert(
      result.rows.length === requests.length && result.rows.every((row, index) => row.ordinal === index),
      `ledger_authorize_usage answered ${result.rows.length} rows out of order for ${requests.length} requests`,
    );
    return result.rows.map((row, index) => decisionOf(row, requests[index] as UsageAuthorizationRequest));
  }
}

const authorizationSchemaVersion = schemaVersionOf("UsageAuthorized");

/** A hold is asked for a model the gateway found in the catalog; any other is a defect, never a refusal. */
function catalogModelOf(slug: string) {
  const model = findModel(slug);
  assert(model !== undefined, `a hold was asked for ${slug}, which the catalog does not list`);
  return model;
}

/**
 * One request as `ledger_authorize_usage` takes it: the authorization's fields, which its row keeps as
 * columns and builds the event from at log time (src/ledger/schema/holds/ledger-hold-authorization.ts).
 */
export function holdStatementInputOf(request: UsageAuthorizationRequest, ordinal: number) {
  const { data } = request;
  return {
    ordinal,
    event_id: request.eventId,
    schema_version: authorizationSchemaVersion,
    request_id: data.requestId,
    account_kind: data.account.kind,
    account_id: data.account.id,
    key_id: data.keyId,
    user_id: data.userId,
    organization_id: data.organizationId,
    model: data.model,
    model_entries: entriesAllowing(catalogModelOf(data.model)),
    endpoint: data.endpoint,
    streamed: data.streamed,
    started_at: data.startedAt,
    expires_at: data.expiresAt,
    gateway_instance: data.gatewayInstance,
    input_tokens_max: data.estimate.inputTokensMax,
    output_tokens_max: data.estimate.outputTokensMax,
    estimate_won: data.estimate.estimatedWon,
  };
}

interface AuthorizationRow {
  ordinal: number;
  hold_won: string | null;
  available_won: string;
  refusal: UsageRefusalReason | null;
  limit_value: string | null;
}

/** One request's decision, checked against what a hold may be (money-invariants.ts). */
function decisionOf(row: AuthorizationRow, request: UsageAuthorizationRequest): UsageAuthorizationDecision {
  const requestId = request.data.requestId;
  if (row.hold_won === null) {
    if (row.refusal === null || row.refusal === "funds") {
      assertRefusedForFunds(row.available_won, requestId);
      return { kind: "refused", reason: "funds", availableWon: row.available_won };
    }
    if (row.refusal === "key-inactive" || row.refusal === "model-not-allowed")
      return { kind: "refused", reason: row.refusal, availableWon: row.available_won };
    assert(
      row.limit_value !== null,
      `the hold of ${requestId} was refused by a ${row.refusal} limit it has not`,
    );
    return { kind: "refused", reason: row.refusal, limit: row.limit_value, availableWon: row.available_won };
  }
  assertHoldWithinFunds(
    {
      holdWon: row.hold_won,
      availableWon: row.available_won,
      estimatedWon: request.data.estimate.estimatedWon,
    },
    requestId,
  );
  return { kind: "held", holdWon: row.hold_won, availableWon: row.available_won };
}
