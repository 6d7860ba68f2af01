/**
 * Every PostgreSQL advisory lock key the service takes, in one place, so two uses cannot share a key by
 * accident. The values never change: during a rolling deploy a process of the previous version still
 * contends for the same locks as the new ones, and a renumbered key would let both lead at once. A new use
 * takes a new number.
 */
export const advisoryLockKeys = {
  /** Applying migrations: processes starting together migrate one after the other (database/migrations.ts). */
  migrations: 7_310_001,
  /** The projection runner's lead (ledger/projection); `ledger rebuild` takes it to stop the runner. */
  projectionRunner: 7_310_002,
  /** The periodic billing tasks' lead: sweep, FX schedule, orphan holds (workers/billing-workers.ts). */
  billingLeader: 7_310_003,
  /** The ledger checkpointer's lead: one process seals checkpoints (ledger/integrity/ledger-checkpointer.ts). */
  ledgerCheckpointer: 7_310_004,
  /** Pruning the request log, per transaction: one gateway prunes at a time (gateway/activity). */
  requestLogPrune: 7_310_028,
  /**
   * Appends with expected version "any", per transaction, with the stream's hash as the second key: such
   * appends to one stream take turns instead of racing for its next version (ledger/store).
   */
  anyVersionAppends: 7_310_029,
  /**
   * Each gateway process's session, with its instance id's hash as the second key, held for the process's
   * life: the orphan sweep tells a dead gateway from a paused or cut-off one by it (billing/holds).
   */
  gatewaySession: 7_310_030,
  /**
   * A webhook endpoint's test messages, per transaction, with the endpoint id's hash as the second key: each
   * is counted against the bound of waiting ones after the one before it is added (billing/alerts).
   */
  webhookTestMessages: 7_310_031,
  /**
   * Leasing due webhook messages, per transaction: workers lease in turns, so each counts the attempts in
   * flight per account with the others' leases in (billing/alerts/webhook-outbox.ts).
   */
  webhookLeases: 7_310_032,
} as const satisfies Record<string, number>;

export type AdvisoryLockKey = (typeof advisoryLockKeys)[keyof typeof advisoryLockKeys];
