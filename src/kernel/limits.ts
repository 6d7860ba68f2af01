import { ConfigError } from "./config-error";

/**
 * Every bound of the service, named with its unit last, in this one file (TigerBeetle's `constants.zig`), in
 * one object per concern: `limits` (the service's own machinery: pools, projections, checkpoints, holds, the
 * outbox, the request log, HTTP, the stop), `billingLimits`, `chargeLimits`, `readLimits`, `statementLimits`,
 * `sessionLimits`, `keyTextLimits`, `keyLimitBounds`, `upstreamLimits`, and the defaults an operator or a test
 * may override: `upstreamTimeoutDefaults`, `koreaeximDefaultLimits`, `resilienceLimitDefaults`,
 * `defaultSettlementTimings`, with `environmentRanges` for what src/config.ts accepts from the environment.
 *
 * The relations between them are asserted when this module loads (`assertLimitRelations`), so a change that
 * makes two limits contradict each other stops every process and test at once, naming the relation; the
 * values the environment sets are checked against them at start (config.ts, holds/settlement-timings.ts).
 *
 * Left in their own files, on purpose: constants of a protocol or a format (OpenAI's four stop sequences,
 * a hash's 32 bytes), the simulator's pacing, and local mechanics no operator would tune (memo sizes of
 * pure functions, a verify pass's page). src/database keeps its connection timings beside the code that
 * uses them.
 */

export const limits = {
  databaseConnectionsMax: 20,
  /** The pool of `npm run ledger` (one command at a time: a few connections are plenty). */
  ledgerCliDatabaseConnectionsMax: 4,
  eventStorePollIntervalMs: 1_000,
  projectionBatchSizeMax: 1_000,
  /** The live runner gathers light traffic into fewer transactions; read-your-writes waits this much more. */
  projectionLingerMs: 10,
  projectionStandbyRetryMs: 2_000,
  /** How often a process running projections looks, as it starts on a new database, for their tables. */
  projectionTablesPollIntervalMs: 50,
  /**
   * A column a projection gained is added as a worker starts: each ALTER waits this long at most for its
   * table (readers queue behind a waiting ALTER), then tries again after as long, this many times in all.
   */
  projectionColumnLockWaitMs: 1_000,
  projectionColumnAttemptsMax: 30,
  projectionWaitTimeoutMs: 10_000,
  /**
   * A command decided on a stream (a key's status, an organization's roles) that lost its append to another
   * writer decides again on the new state, after a jittered backoff that doubles from the base to the max,
   * this many times in all (ledger/store/conflict-retry.ts). Within one process such commands take turns, so
   * each competes with one command of each other process at a time; but a burst on one stream through two
   * gateways (sixty role grants at once) keeps the other's commands landing, and a command that lost 10 times
   * running (about a second at the backoff's cap) was refused under load. 30 is some 5 s of losing.
   */
  commandConflictAttemptsMax: 30,
  commandConflictBackoffBaseMs: 5,
  commandConflictBackoffMaxMs: 200,
  /** Read-your-writes waiters re-read checkpoints this often when no notification arrives. */
  projectionWaitPollIntervalMs: 100,
  rebuildBatchSizeMax: 10_000,
  /** Projection rows a rebuild holds in memory before writing them out (≈ 1 KB each at most). */
  rebuildRowsInMemoryMax: 100_000,
  /**
   * Events a rebuild in SQL parses and folds per step; progress is reported after each. A ledger within one
   * step needs no merge of what several folded (about a tenth of its rebuild). The steps are counted from the
   * log table's statistics, a sample, so a ledger near the limit may take two. A million events take about
   * 360 MB of temporary tables and as much again of spilled sorts.
   */
  rebuildChunkEventsMax: 2_000_000,
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
  /**
   * Safety net for a lost NOTIFY: this often the admission cache reads where the projections are, and
   * re-reads every key when its copy has not reached where they were one interval before.
   */
  admissionCacheRefreshIntervalMs: 1_000,
  /**
   * A projection batch's NOTIFY names the accounts its events touched, so each gateway re-reads only their
   * keys; a batch touching more says "anything changed", and so does one whose names pass PostgreSQL's
   * 8,000-byte payload limit, which bounds it first: about 150 names such as `organization:<uuid>` (52 bytes
   * quoted) fit, some 300 of 20 bytes. As many as a batch of events can touch: every gateway re-reads every
   * key it caches after "anything changed", so the names are worth sending whenever they fit.
   */
  touchedAccountsPerNotificationMax: 1_000,
  /** While the database is away, one log line per this interval about failed admission refreshes. */
  admissionCacheErrorLogIntervalMs: 60_000,
  /**
   * While the ledger is away, one log line per this interval about each kind of failure every request meets
   * (holds not placed, requests refused 503, settlements retried): the access log has every request, and a
   * line or three per request would bury everything else.
   */
  ledgerOutageLogIntervalMs: 30_000,
  /** Usages completing their hold rows in one statement (C10); concurrent requests share it. */
  usageCompletionBatchSizeMax: 500,
  /** Settled hold rows the log writer appends in one statement (src/billing/holds/settled-holds-log.ts). */
  settledHoldsLogBatchSizeMax: 500,
  /**
   * How long a log write waits for more settlements to join it: the log, and so the charge, trails the rows
   * by about this. A batch costs about the same however few requests it logs (its append, the funds
   * trigger's folds, then a projection batch and a charge job), so at light load a longer wait shares that
   * among more requests: at one connection, 100 ms rather than 20 cut the statements per request from 6.1
   * to 4.0 and the commits from 4.3 to 3.0 (docs/benchmarks.md).
   */
  settledHoldsLogLingerMs: 100,
  /**
   * How often each log writer looks, by a scan of the hold rows, for settled rows no writer was told of: a
   * process died between settling rows and logging them, or forgot their ids. Every process names the rows
   * it settles to its own writer (the gateway its requests', the workers the orphan sweep's), so the scan
   * finds none in the normal run; it reads the whole table, which holds every row not yet vacuumed away.
   */
  settledHoldsLogPollIntervalMs: 5_000,
  /**
   * A process vacuums the hold rows once its log writer has removed this many, at most once per interval
   * (src/billing/holds/hold-rows-vacuum.ts): every removed row left between two visits is one more page that
   * each hold on its account visits. Each vacuum also has each backend plan the table's statements again
   * (about a millisecond each), which bounds how often is worth it. Against 2,000 rows and 2 s, in alternating
   * rounds at 32 connections: the holds' execution 179 µs per request against 203, the one-connection p50 2.44
   * ms against 2.81, throughput and CPU the same within the runs' noise.
   */
  holdRowsVacuumAfterRows: 500,
  holdRowsVacuumIntervalMinMs: 500,
  /** Holds placed by one statement (C10); concurrent requests share it. */
  holdBatchSizeMax: 500,
  /**
   * A hold statement waits at most this long for each lock on its accounts' funds rows (`lock_timeout`): for
   * its turn at a row, then for the row itself, so 5 s in all. A transaction left open on a row (an
   * operator's `SELECT … FOR UPDATE`) gets that account's requests 503/300, not a wait as long as it lasts
   * (hold-authorizer.ts). Far above the milliseconds another gateway's hold keeps a row; a rebuild keeps them
   * from its recompute to its commit (about a second on a million events), and holds waiting longer are
   * refused too.
   */
  holdLockWaitMs: 2_500,
  /**
   * A request waits at most this long for its hold's statement to answer (generation-holds.ts), then is
   * refused 503/300: a database that takes statements and says nothing (frozen, or cut off without a reset)
   * would otherwise hold every request for as long as it lasts. Past the 10 s a request on an account whose
   * row is held may take (two statements, each waiting twice `holdLockWaitMs`).
   */
  holdAnswerWaitMs: 15_000,
  /**
   * A statement of the log writer (settled-holds-log.ts) or a charge's append (workers' group commit) waits at
   * most this long for each lock on the rows it moves — the accounts' settled funds rows, their keys' spend —
   * (`lock_timeout`). Each has one batch in flight, which mixes accounts: a transaction left open on one
   * account's row would keep every account's rows out of the log and their charges unrecorded for as long as
   * it lasts. So a batch gives up, and its accounts are set apart, the others going on at once. As the holds'
   * bound, and for the same reasons: far above the milliseconds another writer, charge or top-up keeps a
   * row, below what a rebuild keeps them on a ledger of a few million events; a batch that gives up loses
   * nothing (its rows stay, its charges are retried), so a wait cut short costs only a retry.
   */
  settledFundsLockWaitMs: 2_500,
  /**
   * An account whose rows the log writer gave up on is tried again on its own after this, doubling each time
   * it gives up again, up to the max: a held account costs one statement's wait every 15 s at most, on one
   * connection beside the writer's other batches, and its rows reach the log at most that long after the
   * transaction holding it ends.
   */
  lockedAccountRetryBaseMs: 1_000,
  lockedAccountRetryMaxMs: 15_000,
  /** Accounts a process keeps apart at once after their batches gave up (a hint: forgotten whole past it). */
  lockedAccountsApartMax: 10_000,
  /** Output tokens a hold assumes when a request names no maximum (`max_tokens`, `max_output_tokens`). */
  holdExpectedOutputTokens: 1_024,
  /** Near the limit — room for fewer than this many such holds — the hold goes before the upstream call. */
  holdFirstBelowHolds: 10,
  /**
   * Accounts (and keys at their own limit) whose last hold a gateway process remembers, to decide whether
   * the next hold goes first: a hint, not a truth, so past the bound it is forgotten whole.
   */
  holdHintEntriesMax: 10_000,
  /** A refused hold waits at most this long for the account's answered requests to settle, then retries. */
  holdRefusalRecheckWaitMs: 2_000,
  /**
   * The longest a gateway process prices holds with the prices, rate and discount it read: a change's
   * notification drops them at once (hold-pricing.ts); this bounds a lost notification.
   */
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
  // The heartbeat, hold lifetime, progress, stream deadline and drain bound: `defaultSettlementTimings` below.

  /**
   * Containers (objects and arrays) one free-form JSON value of a request may nest, the field's own
   * included: a JSON schema, a tool's parameters. Deeper is refused at validation (400/100), before any
   * code walks it recursively (serialising the upstream request overflowed the stack at a few thousand).
   * A schema nests two per level (`properties`), so 64 leaves room for the 10 levels upstreams accept.
   */
  requestJsonNestingDepthMax: 64,

  httpKeepAliveTimeoutMs: 65_000,
  httpHeadersTimeoutMs: 66_000,
  /**
   * A request's headers and body must arrive within this long (408 otherwise): a body sent a byte at a
   * time holds no memory past it. Node counts only the request; a streamed answer may last its own bound.
   */
  httpRequestTimeoutMs: 120_000,
  /** After cutting requests still running at the drain bound, their handlers get this long to record usage. */
  shutdownCutGraceMs: 1_000,
  /** After the drain, closing queues, workers and pools gets this long before the process exits anyway. */
  shutdownCloseMs: 20_000,
  /** Each readiness check (and each scrape-time probe) of a dependency gives up after this long. */
  readinessProbeTimeoutMs: 2_000,
  /** Ready while the oldest ledger event not yet applied by every projection is at most this old. */
  readinessProjectionLagSecondsMax: 30,
  /** Log lines are written to stdout in blocks of at least this many bytes (a write per line cost ~2% CPU)… */
  logWriteBytesMin: 4_096,
  /** …or this long after the first line of a block, whichever comes first. */
  logFlushIntervalMs: 200,
} as const;

/** PostgreSQL sessions of our own: embedded server, leaders' lock sessions, LISTEN (src/database/). */
export const databaseSessionLimits = {
  /** The embedded server must accept connections within this long of being started. */
  embeddedStartTimeoutMs: 60_000,
  /** A stopping embedded server is waited for this long, then left to the exit hook. */
  embeddedStopTimeoutMs: 30_000,
  /** Opening a leader's lock session, its lock statement and closing it give up after this long. */
  leaderSessionSetupTimeoutMs: 10_000,
  /** Each statement on the periodic tasks' lock session (its liveness check answers within twice this). */
  periodicLeaderQueryTimeoutMs: 10_000,
  /** Each statement of the checkpointer (a seal of many events may take a while). */
  checkpointerQueryTimeoutMs: 60_000,
  /**
   * PostgreSQL ends a leader's lock session idle this long (between statements, or inside a transaction),
   * freeing its lock for a stand-by. A living leader touches its session far more often; a frozen process
   * (SIGSTOP, a VM paused) keeps its socket open and would otherwise hold the lead for as long as it is frozen.
   */
  leaderSessionIdleMaxMs: 10_000,
  listenReconnectDelayInitialMs: 100,
  listenReconnectDelayMaxMs: 5_000,
  /** Each LISTEN reconnect attempt gives up after this long; the next one follows after the backoff. */
  listenConnectTimeoutMs: 10_000,
} as const;

/**
 * Every bound of the billing pipeline. Tests shorten the timing ones through the options of the functions
 * that use them; production uses these values.
 */
export const billingLimits = {
  /** A charge waits at most this long for the prices, discounts and FX projections to reach its usage. */
  chargeProjectionWaitTimeoutMs: 10_000,
  /** An admin write waits at most this long for its projection before answering 503. */
  adminProjectionWaitTimeoutMs: 10_000,
  /**
   * A start waits at most this long for the first-start seeds to decide on the default FX rate; past it, the
   * check goes on in the background until the FX projection catches up (seed-billing.ts).
   */
  firstStartSeedWaitMs: 10_000,
  /** The default-rate check waits for the FX projection in rounds this long: a stop waits at most a round. */
  seedProjectionWaitRoundMs: 1_000,
  /** Requests priced by one query of the pricing read model. */
  pricingRequestsPerQueryMax: 500,

  /** Enqueueing a charge on the request path gives up after this long (the sweeper catches up). */
  chargeEnqueueTimeoutMs: 2_000,
  /** Usages waiting for the queue to answer; beyond this the request path stops trying (queue down). */
  chargeEnqueuesWaitingMax: 10_000,
  /**
   * The gateway gathers the usages finished within this window into one charge job (light traffic). It only
   * delays the charge, never the answer; at one connection, 100 ms instead of 20 took the worker's CPU per
   * request from about 2,900 µs to 1,750–2,000 and Redis's from 350 to 100–120 (`BENCH_ONLY=cost`).
   */
  chargeEnqueueLingerMs: 100,
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

  // The orphan sweep's interval and the staleness window are in `defaultSettlementTimings` (C10).
  /** A hold younger than this is never taken for an orphan. */
  orphanHoldAgeMinMs: 2_000,
  /** Holds one sweep settles (the next sweep takes the rest); priced `pricingRequestsPerQueryMax` at a time. */
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

  /** Rows of billing history per page read from the database while streaming an export. */
  billingHistoryPageSize: 1_000,
  /** Rows one billing export may hold (JSON or CSV). */
  billingHistoryRowsMax: 1_000_000,
  /** FX history rows one GET /admin/fx-rates page holds, and the default. */
  fxRateHistoryRowsMax: 10_000,
  /** Raw events one GET /admin/events returns. */
  eventsPageSizeMax: 1_000,
  /** Changes one GET /admin/prices/history or /admin/discounts/history page holds, and the default. */
  pricingHistoryRowsMax: 1_000,
  pricingHistoryRowsDefault: 100,
  /** Discount scopes (model or any × organization or any), those changed last, whose history one page reads. */
  discountScopesMax: 1_000,
  eventsPageSizeDefault: 100,
  /** Credit amounts are below one trillion won: anything larger is a typo, not a top-up. */
  creditAmountWonBelow: "1000000000000",
  referenceLengthMax: 500,
  /** An `Idempotency-Key` header's length, at most (Stripe's bound: a UUID or a client's own id fits). */
  idempotencyKeyLengthMax: 255,
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

/**
 * Bounds on what a charge may be computed from (src/kernel/charge-limits.ts checks them). They
 * exist so that the C7 formula stays exact within `Money`'s 60 significant digits: with every bound at its
 * maximum the widest intermediate value is won < 3e18 with 36 decimal places, i.e. 55 significant digits.
 * The admin API validates prices, rates and discounts against the same predicates, so a stored value can
 * never make a charge fail.
 */
export const chargeLimits = {
  /**
   * One request never carries two billion tokens (the largest contexts hold a few million). The bound is the
   * widest count every store of one holds: the activity log and a hold's progress keep counts as `integer`,
   * and a count one could not take would cost the batch it was written in.
   */
  tokensPerRequestMax: 2_147_483_647,
  /** Exclusive upper bound of a unit price, USD per 1M tokens. */
  unitPriceUsdPerMillionTokensBelow: 1_000_000,
  /** Exclusive upper bound of an FX rate, KRW per USD. */
  fxRateKrwPerUsdBelow: 1_000_000,
  /** Decimal places allowed in a unit price, an FX rate and a discount rate. */
  decimalPlacesMax: 10,
} as const;

/** Bounds of the read APIs (paging, totals, listings). */
export const readLimits = {
  /**
   * Requests one response id (`chatcmpl-<ms>`, unique per gateway process only) is looked up as, for a
   * receipt: as many gateways as could start a reply in the same millisecond, with room to spare.
   */
  requestsPerResponseIdMax: 100,
  /** Charges one page of GET /llm/billing or /admin/billing may hold, and the default when paging. */
  billingPageRowsMax: 1_000,
  billingPageRowsDefault: 100,
  /** Groups (days, models or keys) one totals answer may hold; more is refused, never cut off. */
  billingTotalsGroupsMax: 10_000,
  /** Accounts one page of GET /admin/accounts may hold, and the default. */
  accountsPageRowsMax: 500,
  accountsPageRowsDefault: 50,
  /** Keys GET /admin/accounts/:kind/:id/keys returns (an account with more is an anomaly to look at). */
  accountKeysMax: 1_000,
  searchTextLengthMax: 200,
  /** Rows of GET /llm/usage (days × models × keys): a year of a busy account is far below. */
  usageByDayRowsMax: 50_000,
  /** Requests one page of the activity log may hold, and the default. */
  activityPageRowsMax: 500,
  activityPageRowsDefault: 50,
  /** Unsealed events counted exactly up to this; beyond it the count says "at least". */
  ledgerUnsealedEventsCountedMax: 100_000,
  /** Events `POST /admin/ledger/verify` verifies in the request; a bigger log is for the CLI. */
  ledgerVerifyOnDemandEventsMax: 200_000,
} as const;

/** Monthly statements and the finance export (src/billing/statements/). */
export const statementLimits = {
  /**
   * A month is provisional until this long after its end, and after it while a request started in it is
   * unsettled (an open hold or an uncharged usage: monthly-statement.ts), so a long stream cannot outlast it.
   */
  settlementGraceMs: 15 * 60_000,
  /** Top-ups or charge groups (model × key) one statement lists; more is an anomaly, refused, never cut. */
  linesMax: 10_000,
  /** Accounts read per query while the finance export walks the month's accounts. */
  exportAccountsPageSize: 500,
  /** Charges per page read from the billing history (and written to the client before the next read). */
  exportChargesPageSize: 1_000,
  /** Bound on one account's charges in one month: far beyond any real month, so a loop cannot run away. */
  exportChargesPerAccountMax: 100_000_000,
  /** Bound on the accounts with charges in one month. */
  exportAccountsMax: 100_000_000,
} as const;

/**
 * The longest id of a user or an organization, wherever one is taken: a session, a sign-in claim, and every
 * route naming an account or a member. One bound, so that whoever can sign in can be funded and given a role.
 */
const accountIdLengthMax = 256;

/** Sessions (C4) and the console's own tokens. */
export const sessionLimits = {
  accountIdLengthMax,
  /** A session minted without a lifetime (POST /admin/sessions, the console's sign-in) lasts this long. */
  sessionTtlSecondsDefault: 12 * 60 * 60,
  sessionTtlSecondsMax: 30 * 24 * 60 * 60,
  /** The admin console's cookie (the admin token exchanged once). */
  adminCookieTtlSeconds: 8 * 60 * 60,
  /**
   * A platform's token may say `nbf` by its own clock: one running this far ahead of a gateway's is not
   * refused for it. `exp` has no leeway: a session ends when its token says.
   */
  notBeforeLeewaySeconds: 60,
  /** A sign-in link is for opening now, not for keeping: it dies in minutes, and signs in once. */
  signInCodeTtlSeconds: 15 * 60,
  /** An OpenID Connect sign-in (state, nonce, PKCE verifier in a signed cookie) must come back within this. */
  oidcTransactionTtlSeconds: 10 * 60,
  /** Each call to the identity provider (discovery, JWKS, token, userinfo) gives up after this long. */
  oidcProviderTimeoutSeconds: 10,
  /** A claim naming a user, an organization or a role longer than this is refused, not stored. */
  oidcClaimTextLengthMax: accountIdLengthMax,
} as const;

/** What a person names and describes an API key with, shown in the console, statements and exports. */
export const keyTextLimits = {
  nameLengthMax: 200,
  descriptionLengthMax: 2_000,
} as const;

/** Per-key limits bigger than any sane budget are refused rather than stored (a typo of zeros). */
export const keyLimitBounds = {
  spendLimitWonMax: "1000000000000",
  rateLimitRequestsPerMinuteMax: 1_000_000,
  /** Entries of a key's allowed models: each must be a catalog slug or family, so this bounds repeats. */
  allowedModelsMax: 1_000,
} as const;

/**
 * How long the gateway waits on one upstream (src/providers/http/upstream-timeouts.ts says what each is), for
 * every endpoint alike; only the service's options (tests) pass others.
 */
export const upstreamTimeoutDefaults = Object.freeze({
  connectTimeoutMs: 10_000,
  /** A JSON reply's headers come only after the whole generation: the official clients' 10 minutes. */
  headersTimeoutMs: 600_000,
  bodyTimeoutMs: 600_000,
  keepAliveTimeoutMs: 30_000,
});

/** What the gateway accepts from an upstream. */
export const upstreamLimits = {
  /** Sockets per upstream: enough for a busy gateway, bounded so one upstream cannot exhaust descriptors. */
  connectionsMaxDefault: 256,
  /** A JSON reply larger than this is treated as malformed rather than buffered. */
  replyBytesMax: 32 * 1024 * 1024,
  /** Only the message of an error body is used, so a little is enough. */
  errorBodyBytesMax: 64 * 1024,
  /** One server-sent event (or one unterminated line) larger than this is treated as malformed. */
  eventCharactersMax: 8 * 1024 * 1024,
  /** An upstream's error message: long enough to say what went wrong, short enough not to flood ours. */
  messageCharactersMax: 300,
} as const;

/** The export-import bank's API (src/billing/fx/koreaexim-client.ts); tests pass shorter ones. */
export const koreaeximDefaultLimits = Object.freeze({
  /** Whole request, connect to last body byte. */
  requestTimeoutMs: 10_000,
  connectTimeoutMs: 5_000,
  /** Attempts for one search date, the first included. */
  attemptsPerDateMax: 4,
  backoffInitialMs: 1_000,
  backoffMaxMs: 8_000,
  responseBodyBytesMax: 1_048_576,
  /** Search dates tried, D−1 included (C7: "walks back … up to 10 days"). */
  walkBackDaysMax: 10,
});

/**
 * Retrying an upstream (C13): the defaults of UPSTREAM_* (src/providers/resilience/resilience-limits.ts
 * says what each bounds; docs/upstream-resilience.md).
 */
export const resilienceLimitDefaults = Object.freeze({
  // 8: with 45% of attempts failing independently (the chaos test), 0.45^8 ≈ 0.17% of requests still fail.
  attemptsMax: 8,
  backoffBaseMs: 100,
  backoffMaxMs: 2_000,
  // The upstream's own 10-minute answer timeout: a long JSON generation is not cut by the deadline.
  requestDeadlineMs: 600_000,
  // The breaker counts requests, and a request that fails at a dead endpoint takes about 5 s of backoff over
  // its 8 attempts: 30 s holds the 5 failed requests that open it even at one request at a time.
  breakerWindowMs: 30_000,
  breakerRequestsMin: 5,
  breakerFailureRateMin: 0.5,
  breakerOpenMs: 5_000,
  breakerHalfOpenProbesMax: 1,
});

/**
 * The timings C10 rests on (src/billing/holds/settlement-timings.ts says what each bounds and asserts their
 * relations); four of them are set through the environment, the same for every role of a deployment.
 */
export const defaultSettlementTimings = Object.freeze({
  heartbeatIntervalMs: 2_000,
  presumedDeadAfterMs: 10_000,
  orphanSweepIntervalMs: 2_000,
  observationGapMaxMs: 5_000,
  // The upstream's own 10-minute timeout, and a minute to settle; renewed while the request runs.
  holdLifetimeMs: 660_000,
  progressIntervalMs: 2_000,
  streamDeadlineMs: 30 * 60_000,
  shutdownDrainMs: 10_000,
  usageDurableWaitMs: 10_000,
});

/** A closed range an environment variable must fall in. */
export interface EnvironmentRange {
  min: number;
  max: number;
}

/** What src/config.ts accepts from the environment; the defaults are the objects above. */
export const environmentRanges = {
  /** MAX_BODY_BYTES, and its default. */
  requestBodyBytes: { min: 1_024, max: 256 * 1024 * 1024 },
  requestBodyBytesDefault: 4_194_304,
  simulatorLatencyMs: { min: 0, max: 600_000 },
  /** 0: unlimited (everything at once). */
  simulatorTokensPerSecond: { min: 0, max: 1_000_000 },
  /** STREAM_DEADLINE_MS, SHUTDOWN_DRAIN_MS, HOLD_LIFETIME_MS, GATEWAY_PRESUMED_DEAD_AFTER_MS: 1 ms to a day. */
  settlementTimingMs: { min: 1, max: 86_400_000 },
  upstreamAttemptsMax: { min: 1, max: 32 },
  upstreamBackoffBaseMs: { min: 1, max: 60_000 },
  upstreamBackoffMaxMs: { min: 1, max: 600_000 },
  upstreamRequestDeadlineMs: { min: 1_000, max: 3_600_000 },
  upstreamBreakerWindowMs: { min: 1_000, max: 3_600_000 },
  upstreamBreakerRequestsMin: { min: 1, max: 100_000 },
  /** A share of requests: above 0 (exclusive), at most 1. */
  upstreamBreakerFailureRate: { min: 0, max: 1 },
  upstreamBreakerOpenMs: { min: 100, max: 3_600_000 },
  upstreamBreakerHalfOpenProbesMax: { min: 1, max: 1_000 },
} as const satisfies Record<string, EnvironmentRange | number>;

/**
 * Alerts by signed webhooks (C14; src/billing/alerts/, workers/deliver-webhooks.ts). The retry schedule is
 * Standard Webhooks' own shape, stretched to the contract's 24 hours; tests pass a shorter one to the worker.
 */
export const webhookLimits = {
  /** Each delivery attempt (connect, send, answer) gives up after this long. */
  deliveryTimeoutMs: 10_000,
  /**
   * A look-up of a receiver's host (the address check, at an add and at each attempt, and the connection's
   * own) gives up after this long: a failed attempt, retried on the schedule, or a refused add. A resolver
   * that answers at all does so in well under a second, an uncached name included; 3 s is below the system
   * resolver's first retransmission (glibc's 5 s), so a name server that never answers is seen as such, and
   * the attempt's two look-ups still leave the receiver 4 s of its 10 s deadline.
   */
  hostResolutionTimeoutMs: 3_000,
  /** Bytes of a receiver's answer read (then discarded); the rest is not waited for. */
  responseBytesMax: 4_096,
  /** A message body (`{ type, timestamp, data }`) is never larger. */
  bodyBytesMax: 16_384,
  /** A webhook URL's length. */
  urlLengthMax: 2_048,
  /** Endpoints one account may have. */
  endpointsPerAccountMax: 20,
  /** Test messages of one endpoint waiting for delivery at most (429/130 beyond, with this Retry-After). */
  pendingTestMessagesMax: 5,
  testMessagesRetryAfterSeconds: 60,
  /** A delivery or check pass failing on every poll is logged once, then at most once per this. */
  passErrorLogIntervalMs: 60_000,
  /** Rows one worker leases per pass at most: no more than its free sending slots, of which it has 8. */
  deliveryBatchSizeMax: 20,
  deliveryConcurrencyMax: 8,
  /**
   * Attempts of one account in flight at once, across every worker: the outbox is shared, so an account whose
   * receivers hang (a deadline each) holds this many sending slots and the others' messages go meanwhile.
   */
  deliveryAttemptsInFlightPerAccountMax: 4,
  /**
   * A signing secret whose endpoint is not in the projection is a removed endpoint's once it is this old (a
   * new endpoint's secret is written just before its event): the workers' sweep deletes it.
   */
  secretWithoutEndpointKeptMs: 24 * 3_600_000,
  /**
   * After a rotation, the secret it replaced signs beside the new one this long (Standard Webhooks' several
   * signatures), so receivers move to the new secret without a message they cannot verify.
   */
  previousSecretValidMs: 24 * 3_600_000,
  /**
   * How often the workers sweep what a cut-short removal left (`sweepRemovedEndpoints`) and the secrets
   * rotations replaced whose time is over (`forgetRetiredSecrets`).
   */
  removedEndpointSweepIntervalMs: 60_000,
  /** A leased row is due again after this long if its worker did not finish it (died). */
  deliveryLeaseMs: 60_000,
  /** How often a worker looks for due rows. */
  deliveryPollIntervalMs: 1_000,
  /** Delays before each retry after a failed attempt (the last repeats), for at most `retryWindowMs`. */
  retryDelaysMs: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000],
  retryWindowMs: 24 * 3_600_000,
  /**
   * How often the workers compare available funds with the thresholds, and how many accounts per pass (each
   * pass goes on after the last account the one before checked, wrapping around, so every account is reached).
   */
  balanceCheckIntervalMs: 5_000,
  balanceCheckAccountsMax: 1_000,
  /**
   * `key.limit_reached`: alerts being written at once (a refusal past it is answered without its alert, counted),
   * and how many written (key, window) pairs a process remembers.
   */
  keyLimitAlertWritesInFlightMax: 1_000,
  keyLimitAlertsRememberedMax: 10_000,
  /** How often the workers look for months whose statements became final (`statement.closed`), and how many
   * accounts one pass tells (the rest are found by the next passes: a told account is not looked at again). */
  statementCheckIntervalMs: 60_000,
  statementCheckAccountsMax: 1_000,
  /** Deliveries one `GET /llm/webhooks/{id}/deliveries` answers (newest first). */
  deliveriesListedMax: 100,
} as const;

/** Every object above: what `assertLimitRelations` checks together. */
export const limitsInForce = {
  limits,
  billingLimits,
  chargeLimits,
  readLimits,
  statementLimits,
  sessionLimits,
  databaseSessionLimits,
  upstreamTimeoutDefaults,
  koreaeximDefaultLimits,
  resilienceLimitDefaults,
  defaultSettlementTimings,
  environmentRanges,
  webhookLimits,
};

/** The same shape with plain numbers, so a test can state a contradicting set. */
export type LimitsInForce = { [Group in keyof typeof limitsInForce]: Widened<(typeof limitsInForce)[Group]> };
type Widened<T> = T extends number
  ? number
  : T extends string
    ? string
    : T extends readonly number[]
      ? readonly number[]
      : { readonly [Key in keyof T]: Widened<T[Key]> };

interface LimitRelation {
  /** The relation as it reads, and why it must hold. */
  says: string;
  holds: (set: LimitsInForce) => boolean;
}

const within = (value: number, range: EnvironmentRange) => range.min <= value && value <= range.max;

/** Page defaults within their maxima, pages within what they page through. */
const pagingRelations: LimitRelation[] = [
  {
    says: "readLimits.billingPageRowsDefault ≤ readLimits.billingPageRowsMax",
    holds: ({ readLimits: read }) => read.billingPageRowsDefault <= read.billingPageRowsMax,
  },
  {
    says: "readLimits.accountsPageRowsDefault ≤ readLimits.accountsPageRowsMax",
    holds: ({ readLimits: read }) => read.accountsPageRowsDefault <= read.accountsPageRowsMax,
  },
  {
    says: "readLimits.activityPageRowsDefault ≤ readLimits.activityPageRowsMax",
    holds: ({ readLimits: read }) => read.activityPageRowsDefault <= read.activityPageRowsMax,
  },
  {
    says: "billingLimits.eventsPageSizeDefault ≤ billingLimits.eventsPageSizeMax",
    holds: ({ billingLimits: billing }) => billing.eventsPageSizeDefault <= billing.eventsPageSizeMax,
  },
  {
    says: "billingLimits.pricingHistoryRowsDefault ≤ billingLimits.pricingHistoryRowsMax",
    holds: ({ billingLimits: billing }) => billing.pricingHistoryRowsDefault <= billing.pricingHistoryRowsMax,
  },
  {
    says: "billingLimits.pricingHistoryRowsMax ≤ billingLimits.discountScopesMax (the newest changes lie in as many scopes changed last)",
    holds: ({ billingLimits: billing }) => billing.pricingHistoryRowsMax <= billing.discountScopesMax,
  },
  {
    says: "billingLimits.billingHistoryPageSize ≤ billingLimits.billingHistoryRowsMax (an export reads whole pages)",
    holds: ({ billingLimits: billing }) => billing.billingHistoryPageSize <= billing.billingHistoryRowsMax,
  },
  {
    says: "statementLimits.exportChargesPageSize ≤ statementLimits.exportChargesPerAccountMax",
    holds: ({ statementLimits: statement }) =>
      statement.exportChargesPageSize <= statement.exportChargesPerAccountMax,
  },
  {
    says: "statementLimits.exportAccountsPageSize ≤ statementLimits.exportAccountsMax",
    holds: ({ statementLimits: statement }) =>
      statement.exportAccountsPageSize <= statement.exportAccountsMax,
  },
  {
    says: "sessionLimits.sessionTtlSecondsDefault ≤ sessionLimits.sessionTtlSecondsMax (a default session must be one POST /admin/sessions accepts)",
    holds: ({ sessionLimits: session }) => session.sessionTtlSecondsDefault <= session.sessionTtlSecondsMax,
  },
];

/** Batches within the queues and queries that carry them. */
const batchRelations: LimitRelation[] = [
  {
    says: "billingLimits.chargeJobRequestsMax ≤ billingLimits.pricingRequestsPerQueryMax (a charge job is priced by one query, which refuses more)",
    holds: ({ billingLimits: billing }) => billing.chargeJobRequestsMax <= billing.pricingRequestsPerQueryMax,
  },
  {
    says: "limits.requestLogBatchRowsMax ≤ limits.requestLogQueueRowsMax (a batch is taken from the queue; a bigger one never fills)",
    holds: ({ limits: service }) => service.requestLogBatchRowsMax <= service.requestLogQueueRowsMax,
  },
  {
    says: "limits.usageCompletionBatchSizeMax ≤ limits.usageOutboxEntriesMax (a group commit is taken from the outbox)",
    holds: ({ limits: service }) => service.usageCompletionBatchSizeMax <= service.usageOutboxEntriesMax,
  },
  {
    says: "chargeLimits.tokensPerRequestMax ≤ Number.MAX_SAFE_INTEGER (token counts are JS numbers)",
    holds: ({ chargeLimits: charge }) => charge.tokensPerRequestMax <= Number.MAX_SAFE_INTEGER,
  },
  {
    says: "environmentRanges.requestBodyBytes.max and limits.holdExpectedOutputTokens ≤ chargeLimits.tokensPerRequestMax (a hold prices the body's bytes as input tokens)",
    holds: ({ environmentRanges: ranges, limits: service, chargeLimits: charge }) =>
      ranges.requestBodyBytes.max <= charge.tokensPerRequestMax &&
      service.holdExpectedOutputTokens <= charge.tokensPerRequestMax,
  },
];

/** Timings that only work in one order. */
const timingRelations: LimitRelation[] = [
  {
    says: "limits.commandConflictBackoffBaseMs ≤ limits.commandConflictBackoffMaxMs and limits.commandConflictAttemptsMax ≥ 1",
    holds: ({ limits: service }) =>
      service.commandConflictBackoffBaseMs <= service.commandConflictBackoffMaxMs &&
      service.commandConflictAttemptsMax >= 1,
  },
  {
    says: "limits.lockedAccountRetryBaseMs ≤ limits.lockedAccountRetryMaxMs",
    holds: ({ limits: service }) => service.lockedAccountRetryBaseMs <= service.lockedAccountRetryMaxMs,
  },
  {
    says: "4 × limits.holdLockWaitMs < limits.holdAnswerWaitMs (a request on an account whose row is held is refused by its statements' own lock waits, not cut off first)",
    holds: ({ limits: service }) => 4 * service.holdLockWaitMs < service.holdAnswerWaitMs,
  },
  {
    says: "2 × limits.settledFundsLockWaitMs < limits.usageOutboxDrainMs (a stop's last log write gets past a held account's batch and its own, and logs the others)",
    holds: ({ limits: service }) => 2 * service.settledFundsLockWaitMs < service.usageOutboxDrainMs,
  },
  {
    says: "limits.httpKeepAliveTimeoutMs < limits.httpHeadersTimeoutMs (else a kept-alive socket's next request can be cut by the headers timer)",
    holds: ({ limits: service }) => service.httpKeepAliveTimeoutMs < service.httpHeadersTimeoutMs,
  },
  {
    says: "limits.httpHeadersTimeoutMs < limits.httpRequestTimeoutMs (the headers are part of the request)",
    holds: ({ limits: service }) => service.httpHeadersTimeoutMs < service.httpRequestTimeoutMs,
  },
  {
    says: "limits.usageOutboxDrainMs < limits.shutdownCloseMs (the settlements' drain runs inside the stop's close bound, after which the process exits anyway)",
    holds: ({ limits: service }) => service.usageOutboxDrainMs < service.shutdownCloseMs,
  },
  {
    says: "every limits.usageOutboxRetryDelaysMs < limits.usageOutboxDrainMs (a stop's drain sees at least one more attempt)",
    holds: ({ limits: service }) =>
      service.usageOutboxRetryDelaysMs.length > 0 &&
      service.usageOutboxRetryDelaysMs.every((delayMs) => delayMs < service.usageOutboxDrainMs),
  },
  {
    says: "limits.projectionWaitPollIntervalMs < limits.projectionWaitTimeoutMs (a waiter re-reads the checkpoints before it gives up)",
    holds: ({ limits: service }) => service.projectionWaitPollIntervalMs < service.projectionWaitTimeoutMs,
  },
  {
    says: "limits.projectionLingerMs < limits.projectionWaitTimeoutMs (else every read-your-writes wait outlasts its bound)",
    holds: ({ limits: service }) => service.projectionLingerMs < service.projectionWaitTimeoutMs,
  },
  {
    says: "limits.checkpointPollIntervalMs ≤ limits.checkpointIntervalMs (the checkpointer looks at least once per interval)",
    holds: ({ limits: service }) => service.checkpointPollIntervalMs <= service.checkpointIntervalMs,
  },
  {
    says: "defaultSettlementTimings.presumedDeadAfterMs + databaseSessionLimits.leaderSessionIdleMaxMs + billingLimits.billingLeaderStandbyRetryMs + defaultSettlementTimings.orphanSweepIntervalMs ≤ 25 s (C10 settles an orphan within 30 s, when the leading worker froze too)",
    holds: ({ defaultSettlementTimings: timings, databaseSessionLimits: sessions, billingLimits: billing }) =>
      timings.presumedDeadAfterMs +
        sessions.leaderSessionIdleMaxMs +
        billing.billingLeaderStandbyRetryMs +
        timings.orphanSweepIntervalMs <=
      25_000,
  },
  {
    says: "billingLimits.reconcileUsageStalledCheckIntervalMs < billingLimits.reconcileUsageLockDurationMs (a dead worker's job is found while its lock is still the measure)",
    holds: ({ billingLimits: billing }) =>
      billing.reconcileUsageStalledCheckIntervalMs < billing.reconcileUsageLockDurationMs,
  },
  {
    says: "billingLimits.chargeEnqueueLingerMs + billingLimits.chargeEnqueueTimeoutMs < billingLimits.pendingChargeAgeMs (the sweeper leaves alone usage whose own enqueue may still be on its way)",
    holds: ({ billingLimits: billing }) =>
      billing.chargeEnqueueLingerMs + billing.chargeEnqueueTimeoutMs < billing.pendingChargeAgeMs,
  },
  {
    says: "koreaeximDefaultLimits.connectTimeoutMs ≤ requestTimeoutMs and backoffInitialMs ≤ backoffMaxMs",
    holds: ({ koreaeximDefaultLimits: bank }) =>
      bank.connectTimeoutMs <= bank.requestTimeoutMs && bank.backoffInitialMs <= bank.backoffMaxMs,
  },
  {
    says: "upstreamTimeoutDefaults.connectTimeoutMs ≤ headersTimeoutMs (the connection is part of waiting for the headers)",
    holds: ({ upstreamTimeoutDefaults: upstream }) => upstream.connectTimeoutMs <= upstream.headersTimeoutMs,
  },
];

/** The defaults of what the environment sets are themselves values it would accept. */
const defaultRelations: LimitRelation[] = [
  {
    says: "environmentRanges.requestBodyBytesDefault within environmentRanges.requestBodyBytes",
    holds: ({ environmentRanges: ranges }) => within(ranges.requestBodyBytesDefault, ranges.requestBodyBytes),
  },
  {
    says: "every defaultSettlementTimings value within environmentRanges.settlementTimingMs",
    holds: ({ defaultSettlementTimings: timings, environmentRanges: ranges }) =>
      Object.values(timings).every((valueMs) => within(valueMs, ranges.settlementTimingMs)),
  },
  {
    says: "every resilienceLimitDefaults value within its environmentRanges.upstream… range",
    holds: ({ resilienceLimitDefaults: resilience, environmentRanges: ranges }) =>
      within(resilience.attemptsMax, ranges.upstreamAttemptsMax) &&
      within(resilience.backoffBaseMs, ranges.upstreamBackoffBaseMs) &&
      within(resilience.backoffMaxMs, ranges.upstreamBackoffMaxMs) &&
      within(resilience.requestDeadlineMs, ranges.upstreamRequestDeadlineMs) &&
      within(resilience.breakerWindowMs, ranges.upstreamBreakerWindowMs) &&
      within(resilience.breakerRequestsMin, ranges.upstreamBreakerRequestsMin) &&
      resilience.breakerFailureRateMin > ranges.upstreamBreakerFailureRate.min &&
      resilience.breakerFailureRateMin <= ranges.upstreamBreakerFailureRate.max &&
      within(resilience.breakerOpenMs, ranges.upstreamBreakerOpenMs) &&
      within(resilience.breakerHalfOpenProbesMax, ranges.upstreamBreakerHalfOpenProbesMax),
  },
];

/** Our own database sessions: a LISTEN reconnect backs off upwards, never below where it starts. */
const databaseSessionRelations: LimitRelation[] = [
  {
    says: "databaseSessionLimits.listenReconnectDelayInitialMs ≤ databaseSessionLimits.listenReconnectDelayMaxMs",
    holds: ({ databaseSessionLimits: sessions }) =>
      sessions.listenReconnectDelayInitialMs <= sessions.listenReconnectDelayMaxMs,
  },
];

/**
 * An attempt's two look-ups of its host (the check, the connection) leave it time to connect and hear the
 * answer; a lease outlives the attempt it covers, so a live worker's row is never sent by another one too; one
 * account's attempts leave a worker slots for the others.
 */
const webhookRelations: LimitRelation[] = [
  {
    says: "2 × webhookLimits.hostResolutionTimeoutMs < webhookLimits.deliveryTimeoutMs",
    holds: ({ webhookLimits: webhooks }) => 2 * webhooks.hostResolutionTimeoutMs < webhooks.deliveryTimeoutMs,
  },
  {
    says: "webhookLimits.deliveryTimeoutMs < webhookLimits.deliveryLeaseMs",
    holds: ({ webhookLimits: webhooks }) => webhooks.deliveryTimeoutMs < webhooks.deliveryLeaseMs,
  },
  {
    says: "1 ≤ webhookLimits.deliveryAttemptsInFlightPerAccountMax < webhookLimits.deliveryConcurrencyMax",
    holds: ({ webhookLimits: webhooks }) =>
      webhooks.deliveryAttemptsInFlightPerAccountMax >= 1 &&
      webhooks.deliveryAttemptsInFlightPerAccountMax < webhooks.deliveryConcurrencyMax,
  },
];

export const limitRelations: readonly LimitRelation[] = [
  ...webhookRelations,
  ...pagingRelations,
  ...databaseSessionRelations,
  ...batchRelations,
  ...timingRelations,
  ...defaultRelations,
];

/**
 * Throws a ConfigError naming every relation between limits that does not hold. Called below, when this
 * module loads: every process (and every test) stops before it starts on contradicting limits.
 */
export function assertLimitRelations(set: LimitsInForce = limitsInForce): void {
  const broken = limitRelations.filter((relation) => !relation.holds(set)).map((relation) => relation.says);
  if (broken.length > 0) throw new ConfigError(`invalid limits (src/kernel/limits.ts): ${broken.join("; ")}`);
}

assertLimitRelations();
