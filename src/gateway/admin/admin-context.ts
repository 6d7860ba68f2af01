import type pg from "pg";
import type { ZodType } from "zod";
import type { CommandOrigin } from "../../billing/commands/command-metadata";
import type { Clock, ProjectionWaiting } from "../../billing/commands/projection-waiting";
import type { BillingWriteDependencies } from "../../billing/commands/set-model-price";
import type { FxRateRefresher } from "../../billing/fx/fx-rate-refresh";
import type { EventStore } from "../../ledger/store/event-store";
import { validationErrorOf } from "../api-error";
import { requestIdOf } from "../middleware/request-id";

/** What every admin route needs: the ledger, its read side, and who is asking. */
export interface AdminContext {
  store: EventStore;
  database: pg.Pool;
  waiter: ProjectionWaiting;
  fxRateRefresher: FxRateRefresher;
  clock: Clock;
  projectionWaitTimeoutMs: number;
  billingHistoryRowsMax: number;
  /** The ledger signing key's public half: the only key checkpoint signatures are checked against. */
  ledgerPublicKey: Buffer | undefined;
}

export function writeDependenciesOf(context: AdminContext): BillingWriteDependencies {
  return {
    store: context.store,
    waiter: context.waiter,
    clock: context.clock,
    projectionWaitTimeoutMs: context.projectionWaitTimeoutMs,
  };
}

/** Every admin write is an event carrying who did it and the request it answered (C6, C8). */
export function adminOriginOf(locals: Record<string, unknown>): CommandOrigin {
  const actor = typeof locals.actor === "string" ? locals.actor : "admin";
  return { actor, correlationId: requestIdOf(locals) };
}

export function parseWith<Output>(schema: ZodType<Output>, value: unknown): Output {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  return parsed.data;
}
