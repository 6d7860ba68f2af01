import { randomUUID } from "node:crypto";
import type pg from "pg";
import { PostgresUsageAuthorizations } from "../../src/billing/holds/postgres-usage-authorizations";
import type { UsageAuthorizationRequest } from "../../src/billing/holds/usage-authorizations";
import type { EventStore } from "../../src/ledger/store/event-store";
import { PostgresEventStore } from "../../src/ledger/store/postgres-event-store";

/** The holds port on a test's ledger, as the service wires it (service.ts). */
export function usageAuthorizationsOf(
  pool: Pick<pg.Pool, "query">,
  store: EventStore,
): PostgresUsageAuthorizations {
  if (!(store instanceof PostgresEventStore)) throw new Error("holds need the PostgreSQL event store");
  return new PostgresUsageAuthorizations(pool);
}

/**
 * A hold as a gateway asks for it on a personal account: a JSON chat request of `alpha-5.4-mini`, its
 * authorization's fields as `ledger_authorize_usage` takes them; `data` overrides any of them.
 */
export function personalHoldRequest(
  requestId: string,
  userId: string,
  data: Partial<UsageAuthorizationRequest["data"]> = {},
): UsageAuthorizationRequest {
  const startedAt = new Date();
  return {
    eventId: randomUUID(),
    data: {
      requestId,
      keyId: randomUUID(),
      account: { kind: "user", id: userId },
      userId,
      organizationId: null,
      model: "alpha-5.4-mini",
      endpoint: "chat.completions",
      streamed: false,
      startedAt: startedAt.toISOString(),
      estimate: { inputTokensMax: 1_000, outputTokensMax: 100, estimatedWon: "1" },
      gatewayInstance: "gateway-test",
      expiresAt: new Date(startedAt.getTime() + 600_000).toISOString(),
      ...data,
    },
  };
}
