import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { limits } from "../../../src/kernel/limits";
import type { EventData } from "../../../src/ledger/events";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import {
  expectBalanceIsCreditLessCharges,
  expectBilledAsAnswered,
  expectLedgerUnavailable,
  type GenerationOutcome,
  sendChat,
} from "../../support/generation-outcomes";
import { callJson } from "../../support/json-call";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "../../support/private-postgres-cluster";

/**
 * An operator cancels (`pg_cancel_backend`) or ends (`pg_terminate_backend`) the gateway's backend while it
 * runs a money statement. A hold's statement: nothing was placed, the request is refused 503/300 and billed
 * nothing. A usage's completion of its hold row, or the log writer's append of settled rows: tried again, so
 * what was delivered is billed (C10) — the answer arrives whole, its usage recorded as the upstream reported
 * it and charged once. Each statement is caught while it waits for a row an operator's transaction holds, so
 * the test knows it is running; the server is the test's own, since its backends are ended.
 */

const creditWon = "100000";
type Ending = "cancel" | "terminate";
const endings: readonly Ending[] = ["cancel", "terminate"];

describe("a money statement of the gateway cancelled or ended by an operator", () => {
  let cluster: PrivatePostgresCluster;
  let harness: GatewayHarness;
  /** The operator's transaction, holding rows. */
  let holder: pg.Client;
  /** The operator's other session, which finds and ends the gateway's backend. */
  let admin: pg.Client;
  const keys = new Map<string, string>();
  const outcomes: GenerationOutcome[] = [];

  beforeAll(async () => {
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the cancelled statements test");
    cluster = await createPrivatePostgresCluster("cancelled");
    harness = await startGatewayHarness({
      database: { url: cluster.url, name: "postgres", drop: async () => {} },
      billing: { redisUrl: process.env.REDIS_URL },
      // Two seconds an answer of 20 tokens: under way while the test holds its row.
      simulator: { tokensPerSecond: 10 },
    });
    holder = new pg.Client({ connectionString: cluster.url });
    admin = new pg.Client({ connectionString: cluster.url });
    await Promise.all([holder.connect(), admin.connect()]);
  }, 60_000);
  afterAll(async () => {
    await holder?.end();
    await admin?.end();
    await harness?.close();
    await cluster?.drop();
  });

  async function account(id: string): Promise<string> {
    const existing = keys.get(id);
    if (existing) return existing;
    const { key } = await harness.issueKey(await harness.session(id));
    await harness.topUp({ kind: "user", id }, creditWon);
    keys.set(id, key);
    return key;
  }

  async function chat(id: string, streamed: boolean): Promise<GenerationOutcome> {
    const outcome = await sendChat(harness.baseUrl, {
      account: id,
      key: await account(id),
      streamed,
      timeoutMs: 30_000,
    });
    outcomes.push(outcome);
    return outcome;
  }

  /**
   * Runs `during` while the operator's transaction holds what `lock` takes, and ends that transaction however
   * `during` ends, so a failed case leaves nothing held for the next.
   */
  async function whileOperatorHolds<T>(
    lock: string,
    values: readonly unknown[],
    during: () => Promise<T>,
  ): Promise<T> {
    await holder.query("BEGIN");
    try {
      await holder.query(lock, [...values]);
      return await during();
    } finally {
      await holder.query("ROLLBACK");
    }
  }

  /** The gateway's backend waiting for a lock while it runs the statement `fragment` is part of, then ended. */
  async function endWaitingBackend(fragment: string, ending: Ending): Promise<void> {
    let pid: number | undefined;
    await expect
      .poll(
        async () => {
          const { rows } = await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND strpos(query, $1) > 0`,
            [fragment],
          );
          pid = rows[0]?.pid;
          return pid;
        },
        { timeout: 10_000, interval: 20 },
      )
      .toBeDefined();
    const ended = await admin.query<{ ended: boolean }>(
      `SELECT ${ending === "cancel" ? "pg_cancel_backend" : "pg_terminate_backend"}($1) AS ended`,
      [pid],
    );
    expect(ended.rows[0]!.ended).toBe(true);
  }

  async function recordedUsageOf(requestId: string): Promise<EventData<"UsageRecorded">[]> {
    const { rows } = await admin.query<{ data: EventData<"UsageRecorded"> }>(
      "SELECT data FROM ledger_events WHERE stream_id = $1 AND type = 'UsageRecorded' ORDER BY stream_version",
      [`usage-${requestId}`],
    );
    return rows.map((row) => row.data);
  }

  for (const ending of endings)
    it(`given a hold's statement waiting on its account's row, when it is ${ending === "cancel" ? "cancelled" : "ended"}, then the request is refused 503/300 and nothing is held`, async () => {
      const id = `hold-${ending}`;
      // Served once: the account has its authorized row, which holds lock.
      expect((await chat(id, false)).status).toBe(200);
      const outcome = await whileOperatorHolds(
        "SELECT 1 FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = $1 FOR UPDATE",
        [id],
        async () => {
          const refused = chat(id, ending === "terminate");
          await endWaitingBackend("ledger_authorize_usage", ending);
          return refused;
        },
      );

      expectLedgerUnavailable(outcome);
      // Refused at once, not after the statement's own wait for the row.
      expect(outcome.tookMs).toBeLessThan(limits.holdLockWaitMs);
      const { rows } = await admin.query("SELECT 1 FROM request_holds WHERE request_id = $1", [
        outcome.requestId,
      ]);
      expect(rows).toEqual([]);
      // The account is served as before.
      expect((await chat(id, false)).status).toBe(200);
    });

  for (const ending of endings)
    for (const streamed of [false, true])
      it(`given a usage completing its hold row, when its statement is ${ending === "cancel" ? "cancelled" : "ended"} (${streamed ? "stream" : "JSON"}), then the answer arrives whole and its usage is recorded as delivered`, async () => {
        const id = `usage-${ending}-${streamed ? "stream" : "json"}`;
        await account(id);
        const answered = chat(id, streamed);
        // The hold placed, the answer under way: its row is taken before the usage completes it.
        await expect
          .poll(
            async () =>
              (
                await admin.query(
                  "SELECT 1 FROM request_holds WHERE account_kind = 'user' AND account_id = $1 AND settled_at IS NULL",
                  [id],
                )
              ).rowCount,
            { timeout: 10_000, interval: 20 },
          )
          .toBe(1);
        await whileOperatorHolds(
          "SELECT 1 FROM request_holds WHERE account_kind = 'user' AND account_id = $1 FOR UPDATE",
          [id],
          async () => {
            await endWaitingBackend("settlement_event = input.settlement", ending);
            // Tried again meanwhile, and waiting again: the row is let go within the answer's wait for its usage.
            await new Promise((resolve) => setTimeout(resolve, 500));
          },
        );
        const outcome = await answered;

        expect(outcome.status).toBe(200);
        expect(outcome.outputTokens).toBe(20);
        const recorded = await recordedUsageOf(await loggedRequestId(outcome));
        expect(recorded).toHaveLength(1);
        expect(recorded[0]).toMatchObject({ usageSource: "upstream", tokens: { output: 20 } });
      });

  /** The request's id once its usage is in the log (the log writer follows the rows). */
  async function loggedRequestId(outcome: GenerationOutcome): Promise<string> {
    await expect
      .poll(async () => (await recordedUsageOf(outcome.requestId!)).length, { timeout: 15_000, interval: 50 })
      .toBeGreaterThan(0);
    return outcome.requestId!;
  }

  for (const ending of endings)
    it(`given the log writer appending settled rows, when its statement is ${ending === "cancel" ? "cancelled" : "ended"}, then the rows are logged later, once`, async () => {
      const id = `log-${ending}`;
      await account(id);
      // The append's funds trigger moves the account's settled row: held, the append waits for it.
      const outcome = await whileOperatorHolds(
        "SELECT 1 FROM account_funds_settled WHERE account_kind = 'user' AND account_id = $1 FOR UPDATE",
        [id],
        async () => {
          const answered = await chat(id, false);
          expect(answered.status).toBe(200);
          await endWaitingBackend("ledger_hold_authorization(holds)", ending);
          await new Promise((resolve) => setTimeout(resolve, 500));
          return answered;
        },
      );

      const recorded = await recordedUsageOf(await loggedRequestId(outcome));
      expect(recorded).toHaveLength(1);
      expect(recorded[0]).toMatchObject({ usageSource: "upstream", tokens: { output: 20 } });
    });

  for (const ending of endings)
    it(`given an account read waiting on a table an operator locked, when it is ${ending === "cancel" ? "cancelled" : "ended"}, then the read is refused 503/300, never 500`, async () => {
      const id = `read-${ending}`;
      await account(id);
      const session = await harness.session(id);
      const reply = await whileOperatorHolds(
        "LOCK TABLE account_funds_settled IN ACCESS EXCLUSIVE MODE",
        [],
        async () => {
          const reading = callJson(harness.url, "GET", "/llm/balance", session);
          // The balance read's own words: the admission cache's read of the account just topped up joins
          // account_funds too, and may wait on the same lock.
          await endWaitingBackend("held_won::text AS held_won, pending_won::text", ending);
          return reading;
        },
      );

      expect(reply).toEqual({
        status: 503,
        body: expect.objectContaining({
          status: 300,
          message: "The billing ledger is unavailable; try again shortly",
        }),
      });
      expect((await callJson(harness.url, "GET", "/llm/balance", session)).status).toBe(200);
    });

  it("then every request is billed as it ended, once", async () => {
    await expectBilledAsAnswered(harness.service.ledger, outcomes);
    for (const id of keys.keys())
      await expectBalanceIsCreditLessCharges(harness.service.ledger.pool, { kind: "user", id }, creditWon);
  }, 120_000);
});
