/**
 * Every bound of the service that is not configuration, named with its unit, in one place (the timings C10
 * rests on are in billing/holds/settlement-timings.ts, the billing pipeline's in billing/billing-limits.ts).
 */
export const limits = {
  databaseConnectionsMax: 20,
  eventStorePollIntervalMs: 1_000,
  projectionBatchSizeMax: 1_000,
  /** The live runner gathers light traffic into fewer transactions; read-your-writes waits this much more. */
  projectionLingerMs: 10,
  projectionStandbyRetryMs: 2_000,
  projectionWaitTimeoutMs: 10_000,
  /** Read-your-writes waiters re-read checkpoints this often when no notification arrives. */
  projectionWaitPollIntervalMs: 100,
  rebuildBatchSizeMax: 10_000,
  /** Projection rows a rebuild holds in memory before writing them out (≈ 1 KB each at most). */
  rebuildRowsInMemoryMax: 100_000,
  /** Events a rebuild in SQL parses and folds per step; progress is reported after each. */
  rebuildChunkEventsMax: 250_000,
  /** A checkpoint seals at most this many events, and seals as soon as this many are sealable. */
  checkpointEventsMax: 10_000,
  /** Fewer events are sealed once the last checkpoint is this old. */
  checkpointIntervalMs: 10_000,
  checkpointPollIntervalMs: 1_000,
  checkpointsPerPassMax: 1_000,
  /** API keys whose admission data a gateway process keeps in memory. */
  admissionCacheEntriesMax: 10_000,
  /** A cached key unused this long is dropped at the next refresh. */
  admissionCacheIdleMs: 60_000,
  /** Safety net for a lost NOTIFY: the admission cache re-reads its keys this often regardless. */
  admissionCacheRefreshIntervalMs: 1_000,
  /**
   * A projection batch's NOTIFY names the accounts its events touched, so each gateway re-reads only their
   * keys; a batch touching more says "anything changed" (as does one whose names pass PostgreSQL's
   * 8,000-byte payload limit). 150 names such as `organization:<uuid>` (52 bytes quoted) fit.
   */
  touchedAccountsPerNotificationMax: 150,
  /** While the database is away, one log line per this interval about failed admission refreshes. */
  admissionCacheErrorLogIntervalMs: 60_000,
  usageAppendBatchSizeMax: 500,
  /** Holds placed by one statement (C10); concurrent requests share it. */
  holdBatchSizeMax: 500,
  /** Output tokens a hold assumes when a request names no maximum (`max_tokens`, `max_output_tokens`). */
  holdExpectedOutputTokens: 1_024,
  /** Near the limit — room for fewer than this many such holds — the hold goes before the upstream call. */
  holdFirstBelowHolds: 10,
  /** A refused hold waits at most this long for the account's answered requests to settle, then retries. */
  holdRefusalRecheckWaitMs: 2_000,
  /** How long a gateway process prices holds with the prices, rate and discount it read. */
  holdPricingTtlMs: 5_000,
  holdPricingEntriesMax: 10_000,
  /** Usage settlements waiting to be written; past this the gateway answers 503 instead of admitting. */
  usageOutboxEntriesMax: 50_000,
  /** Backoff between attempts at writing a settlement while the ledger is away (the last repeats). */
  usageOutboxRetryDelaysMs: [50, 250, 1_000, 2_000, 5_000],
  /** At stop, how long the gateway waits for answered requests' settlements to be written. */
  usageOutboxDrainMs: 10_000,
  /**
   * The activity log's rows (src/gateway/activity/request-log-writer.ts): one INSERT per process every this many
   * ms, or at once when a batch is full; past the queue's bound rows are dropped and counted, never waited for.
   */
  requestLogFlushIntervalMs: 250,
  requestLogBatchRowsMax: 500,
  requestLogQueueRowsMax: 20_000,
  /** Activity-log rows older than this are pruned, at most `requestLogPruneRowsMax` per pass each interval. */
  requestLogRetentionDays: 90,
  requestLogPruneIntervalMs: 10 * 60_000,
  requestLogPruneRowsMax: 10_000,
  // The heartbeat, hold lifetime, progress, stream deadline and drain bound: holds/settlement-timings.ts.

  httpKeepAliveTimeoutMs: 65_000,
  httpHeadersTimeoutMs: 66_000,
  /** After cutting requests still running at the drain bound, their handlers get this long to record usage. */
  shutdownCutGraceMs: 1_000,
  /** After the drain, closing queues, workers and pools gets this long before the process exits anyway. */
  shutdownCloseMs: 20_000,
  /** Each readiness check (and each scrape-time probe) of a dependency gives up after this long. */
  readinessProbeTimeoutMs: 2_000,
  /** Ready while the oldest ledger event not yet applied by every projection is at most this old. */
  readinessProjectionLagSecondsMax: 30,
} as const;
