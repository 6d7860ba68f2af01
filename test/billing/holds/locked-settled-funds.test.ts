import type { Queue } from "bullmq";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChargeUsageJobData,
  chargeUsageJobOptions,
  usageChargesQueueName,
} from "../../../src/billing/queue/charge-queue";
import { openQueue } from "../../../src/billing/queue/queue-backend";
import { limits } from "../../../src/kernel/limits";
import { capturedLog } from "../../support/captured-log";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import {
  expectBalanceIsCreditLessCharges,
  expectBilledAsAnswered,
  type GenerationOutcome,
  sendChat,
} from "../../support/generation-outcomes";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "../../support/private-postgres-cluster";

/**
 * An operator's transaction left open on one account's settled funds row (`SELECT … FROM
 * account_funds_settled … FOR UPDATE`, 30 s), which every log write and every charge of that account moves.
 * Requests are served on every account (a hold locks the authorized row, not this one); meanwhile the other
 * accounts' settled rows are logged, and their charges already under way are recorded, each within a few
 * seconds, while the held account's rows stay where they are; once the transaction ends, they are logged and
 * charged too, and every request is billed once, what its usage cost. The log writers and the charges each
 * have one batch in flight, mixing accounts: without a bound on its wait, one held row stops them all.
 *
 * The other accounts' requests served while the row is held are charged only once it is let go: the
 * operator's transaction holds a transaction id (`FOR UPDATE` takes one), below which every reader of the log
 * stops (log-visibility.ts), so no projection — and no charge, which waits for the pricing ones — reaches
 * their usage before. On a server of its own, as that holds back every database of its server.
 */

const lockedFor = 30_000;
/** A batch's wait for the held row, then the free account's own batch, with room for a loaded machine. */
const withinMs = 2 * limits.settledFundsLockWaitMs + 5_000;
const creditWon = "100000";

interface LogLine {
  level: number;
  msg: string;
}

describe("an account whose settled funds row an operator's transaction holds", () => {
  let cluster: PrivatePostgresCluster;
  let harness: GatewayHarness;
  let operator: pg.Client;
  let observer: pg.Client;
  let charges: Queue<ChargeUsageJobData>;
  const keys = new Map<string, string>();
  // A prefix of the test's own: the charge queue it pauses is the one the harness's workers take.
  const queuePrefix = `test-locked-settled-funds-${process.pid}`;
  const gatewayLog = capturedLog<LogLine>();

  beforeAll(async () => {
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the locked settled funds test");
    cluster = await createPrivatePostgresCluster("locked_settled_funds");
    harness = await startGatewayHarness({
      database: { url: cluster.url, name: "postgres", drop: async () => {} },
      billing: { redisUrl: process.env.REDIS_URL, queuePrefix },
      service: { logger: gatewayLog.logger },
    });
    for (const account of ["locked", "free"]) {
      keys.set(account, (await harness.issueKey(await harness.session(account))).key);
      await harness.topUp({ kind: "user", id: account }, creditWon);
    }
    charges = openQueue<ChargeUsageJobData>(
      usageChargesQueueName,
      { kind: "redis", redisUrl: process.env.REDIS_URL, prefix: queuePrefix },
      { role: "background", defaultJobOptions: chargeUsageJobOptions },
    );
    operator = new pg.Client({ connectionString: cluster.url });
    observer = new pg.Client({ connectionString: cluster.url });
    await Promise.all([operator.connect(), observer.connect()]);
  }, 60_000);
  afterAll(async () => {
    await operator?.end();
    await observer?.end();
    await charges?.close();
    await harness?.close();
    await cluster?.drop();
  });

  const chat = (account: string, streamed: boolean) =>
    sendChat(harness.baseUrl, { account, key: keys.get(account)!, streamed, timeoutMs: 20_000 });

  /** Of these requests: how many have their usage in the log (as stored), their charge, their row still. */
  async function stateOf(outcomes: readonly GenerationOutcome[]) {
    const { rows } = await observer.query<{ types: string[] }>(
      `SELECT array_agg(type) AS types FROM ledger_events WHERE stream_id = ANY($1) GROUP BY stream_id`,
      [outcomes.map((outcome) => `usage-${outcome.requestId}`)],
    );
    const held = await observer.query("SELECT 1 FROM request_holds WHERE request_id = ANY($1)", [
      outcomes.map((outcome) => outcome.requestId),
    ]);
    return {
      logged: rows.filter((row) => row.types.includes("UsageRecorded")).length,
      charged: rows.filter((row) => row.types.includes("UsageCharged")).length,
      rows: held.rowCount,
    };
  }

  it("logs and charges the other accounts meanwhile, the held one once it is let go, each request once", async () => {
    const outcomes: GenerationOutcome[] = [];
    for (const account of ["locked", "free"]) outcomes.push(await chat(account, false));

    // Given usages logged before the row is held whose charges are still to record (held back in the queue),
    await charges.pause();
    const underWay = await Promise.all([
      chat("locked", false),
      chat("locked", true),
      chat("free", false),
      chat("free", true),
    ]);
    outcomes.push(...underWay);
    await expect.poll(async () => (await stateOf(underWay)).logged, { timeout: 10_000 }).toBe(4);

    // when an operator's transaction takes the held account's settled row and keeps it,
    await operator.query("BEGIN");
    await operator.query(
      "SELECT * FROM account_funds_settled WHERE account_kind = 'user' AND account_id = 'locked' FOR UPDATE",
    );
    const lockedAtMs = Date.now();
    await charges.resume();

    // then the other account's charges under way are recorded, though they shared batches with the held one's,
    const underWayFree = underWay.filter((outcome) => outcome.account === "free");
    await expect
      .poll(async () => (await stateOf(underWayFree)).charged, { timeout: withinMs, interval: 100 })
      .toBe(underWayFree.length);

    // and requests on both accounts are served as before, the other account's logged within a few seconds.
    const meanwhile: GenerationOutcome[] = [];
    while (Date.now() - lockedAtMs < lockedFor - withinMs - 2_000)
      meanwhile.push(
        ...(await Promise.all([chat("locked", false), chat("free", false), chat("free", true)])),
      );
    outcomes.push(...meanwhile);
    expect(meanwhile.map((outcome) => outcome.status)).toEqual(meanwhile.map(() => 200));
    for (const outcome of meanwhile) expect(outcome.tookMs).toBeLessThan(2_000);
    const meanwhileFree = meanwhile.filter((outcome) => outcome.account === "free");
    await expect
      .poll(async () => stateOf(meanwhileFree), { timeout: withinMs, interval: 100 })
      .toMatchObject({ logged: meanwhileFree.length, rows: 0 });
    // The held account's rows stay until they can be logged: nothing of them is in the log yet.
    const meanwhileLocked = meanwhile.filter((outcome) => outcome.account === "locked");
    expect(await stateOf(meanwhileLocked)).toEqual({ logged: 0, charged: 0, rows: meanwhileLocked.length });
    expect(Date.now() - lockedAtMs).toBeLessThan(lockedFor);

    while (Date.now() - lockedAtMs < lockedFor) await new Promise((resolve) => setTimeout(resolve, 100));
    await operator.query("ROLLBACK");

    // Once let go, every request is logged and charged once: one charge each, what its usage recorded.
    await expectBilledAsAnswered(harness.service.ledger, outcomes);
    for (const account of ["locked", "free"]) {
      const ofAccount = outcomes.filter((outcome) => outcome.account === account);
      const { rows } = await observer.query<{ charges: number; charged_won: string; as_recorded: boolean }>(
        `SELECT sum(charges)::int AS charges, sum(charged)::text AS charged_won,
                bool_and(charged = recorded) AS as_recorded
         FROM (SELECT count(*) FILTER (WHERE type = 'UsageCharged') AS charges,
                      sum((data->>'amountWon')::numeric) FILTER (WHERE type = 'UsageCharged') AS charged,
                      sum((data->>'pendingWon')::numeric) FILTER (WHERE type = 'UsageRecorded') AS recorded
               FROM ledger_events WHERE stream_id = ANY($1) GROUP BY stream_id) streams`,
        [ofAccount.map((outcome) => `usage-${outcome.requestId}`)],
      );
      // One charge per request, each what its usage recorded.
      expect(rows[0], account).toEqual({
        charges: ofAccount.length,
        charged_won: expect.any(String),
        as_recorded: true,
      });
      expect(Number(rows[0]!.charged_won), account).toBeGreaterThan(0);
      await expectBalanceIsCreditLessCharges(
        harness.service.ledger.pool,
        { kind: "user", id: account },
        creditWon,
      );
    }
    // The gateway's writer told of the held row at warn, a few times at most, and of nothing at error.
    const lockWarnings = gatewayLog.lines.filter(
      (line) => line.level === 40 && /settled holds/.test(line.msg),
    );
    expect(lockWarnings.length).toBeGreaterThan(0);
    expect(lockWarnings.length).toBeLessThanOrEqual(
      2 * Math.ceil(lockedFor / limits.ledgerOutageLogIntervalMs) + 2,
    );
    expect(gatewayLog.lines.filter((line) => line.level >= 50)).toEqual([]);
  }, 180_000);
});
