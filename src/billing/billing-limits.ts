/**
 * Every bound of the billing pipeline, named with its unit. Tests shorten the timing ones through the
 * options of the functions that use them; production uses these values.
 */
export const billingLimits = {
  /** A charge waits at most this long for the prices, discounts and FX projections to reach its usage. */
  chargeProjectionWaitTimeoutMs: 10_000,
  /** An admin write waits at most this long for its projection before answering 503. */
  adminProjectionWaitTimeoutMs: 10_000,
  /** Requests priced by one query of the pricing read model. */
  pricingRequestsPerQueryMax: 500,

  /** Enqueueing a charge on the request path gives up after this long (the sweeper catches up). */
  chargeEnqueueTimeoutMs: 2_000,
  /** Usages waiting for the queue to answer; beyond this the request path stops trying (queue down). */
  chargeEnqueuesWaitingMax: 10_000,
  /** The gateway gathers the usages finished within this window into one charge job (light traffic). */
  chargeEnqueueLingerMs: 20,
  /** Requests in one charge job (at most `pricingRequestsPerQueryMax`: a job is priced by one query). */
  chargeJobRequestsMax: 200,
  /** Deliveries of one charge job before BullMQ gives up on it (the sweeper enqueues it again later). */
  chargeJobAttemptsMax: 8,
  chargeJobBackoffInitialMs: 1_000,
  /** Jobs charged at once by one worker process (each job a batch of requests). */
  reconcileUsageConcurrency: 8,
  /** Charges one worker process appends in one statement (group commit across its jobs). */
  chargeAppendBatchSizeMax: 1_000,
  /** A worker that stops renewing its lock for this long is presumed dead and its job redelivered. */
  reconcileUsageLockDurationMs: 30_000,
  reconcileUsageStalledCheckIntervalMs: 15_000,
  /** Times a job may be recovered from a dead worker before it fails (then the sweeper re-enqueues it). */
  reconcileUsageStalledCountMax: 5,

  /** How often the sweeper looks for usage left uncharged (a lost charge job is charged within ~10 s). */
  pendingChargeSweepIntervalMs: 2_000,
  /**
   * Usage younger than this is left alone: its own job is most likely still on its way (the gateway's jobs
   * are charged within ~100 ms when the queue works). Older usage in a job still queued is enqueued once
   * more at most: the sweeper remembers its jobs until they leave the queue.
   */
  pendingChargeAgeMs: 5_000,
  pendingChargeSweepPageSize: 1_000,
  /** Pages per sweep: at most 100,000 usages re-enqueued every interval. */
  pendingChargeSweepPagesMax: 100,

  // The sweep's interval and the staleness window are in holds/settlement-timings.ts with the other C10 timings.
  /** A hold younger than this is never taken for an orphan. */
  orphanHoldAgeMinMs: 2_000,
  /** Holds one sweep settles (the next sweep takes the rest). */
  orphanHoldsPerSweepMax: 1_000,
  /** How often a stand-by worker tries to take the lead (and the leader checks its session). */
  billingLeaderStandbyRetryMs: 1_000,
  /** How often the leader re-asserts the FX job scheduler and checks that today has a rate. */
  fxScheduleCheckIntervalMs: 60_000,
  /** A failed daily refresh job is kept this long, so the check does not start it again and again. */
  fxRefreshFailedJobKeptSeconds: 24 * 60 * 60,

  /** Attempts of one FX refresh job (the bank client retries each request on its own besides). */
  fxRefreshJobAttemptsMax: 4,
  fxRefreshJobBackoffInitialMs: 5 * 60_000,

  /** Pending usages one account view prices; more than this is reported as an error, never truncated. */
  pendingChargesPricedMax: 20_000,
  /** Rows of billing history per page read from the database while streaming an export. */
  billingHistoryPageSize: 1_000,
  /** Rows one billing export may hold (JSON or CSV). */
  billingHistoryRowsMax: 1_000_000,
  /** FX history rows one GET returns. */
  fxRateHistoryRowsMax: 10_000,
  /** Raw events one GET /admin/events returns. */
  eventsPageSizeMax: 1_000,
  /** Changes one GET /admin/prices/history or /admin/discounts/history answer holds, and the default. */
  pricingHistoryRowsMax: 1_000,
  pricingHistoryRowsDefault: 100,
  /** Discount scopes (model or any × organization or any) whose history one answer reads. */
  discountScopesMax: 1_000,
  eventsPageSizeDefault: 100,
  /** Credit amounts are below one trillion won: anything larger is a typo, not a top-up. */
  creditAmountWonBelow: "1000000000000",
  referenceLengthMax: 500,
  /** Idle BullMQ queue connections to PostgreSQL per queue or worker (PostgreSQL backend). */
  queueDatabaseConnectionsMax: 4,
  /** Connecting to Redis gives up after this long; ioredis then retries with backoff. */
  redisConnectTimeoutMs: 2_000,
  redisReconnectDelayMaxMs: 5_000,
  /** Closing a queue never waits longer than this (Redis may be gone). */
  queueCloseTimeoutMs: 5_000,
  /** Errors of one queue connection are logged at most once per this interval. */
  queueErrorLogIntervalMs: 30_000,
} as const;
