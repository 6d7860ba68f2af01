import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../../projections";
import { limits } from "../../../src/kernel/limits";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import {
  expectBalanceIsCreditLessCharges,
  expectLedgerUnavailable,
  type GenerationOutcome,
  sendChat,
} from "../../support/generation-outcomes";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "../../support/private-postgres-cluster";

/**
 * PostgreSQL frozen (SIGSTOP: a host that froze, a network that drops every packet): connections stay open and
 * statements are taken, but nothing answers. C3: a request whose hold cannot be recorded is refused 503/300 —
 * within `limits.holdAnswerWaitMs`, not for as long as the database stays frozen — and a hold its statement
 * places once the database answers again is released, so nothing refused is billed and nothing stays held.
 */

const creditWon = "1000";

describe("a frozen database", () => {
  let cluster: PrivatePostgresCluster;
  let harness: GatewayHarness;

  beforeAll(async () => {
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the frozen-database test");
    cluster = await createPrivatePostgresCluster("frozen");
    harness = await startGatewayHarness({
      database: { url: cluster.url, name: "postgres", drop: async () => {} },
      billing: { redisUrl: process.env.REDIS_URL },
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
    await cluster?.drop();
  });

  it("refuses 503/300 within the hold's wait while frozen, and once thawed bills nothing refused and holds nothing", async () => {
    // Given: a key in use, so the pool has connections open that the frozen server keeps
    const key = (await harness.issueKey(await harness.session("frozen"))).key;
    await harness.topUp({ kind: "user", id: "frozen" }, creditWon);
    const warm = await Promise.all(
      [false, true, false, true].map((streamed) =>
        sendChat(harness.baseUrl, { account: "frozen", key, streamed, timeoutMs: 30_000 }),
      ),
    );
    expect(warm.map((outcome) => outcome.status)).toEqual([200, 200, 200, 200]);

    // When: the server freezes, and requests keep coming
    const thaw = await cluster.freeze();
    let refused: GenerationOutcome[] | undefined;
    try {
      const sent = [false, true, false, true].map(async (streamed, index) => {
        await new Promise((resolve) => setTimeout(resolve, index * 300));
        return sendChat(harness.baseUrl, { account: "frozen", key, streamed, timeoutMs: 60_000 });
      });
      // Thawed as soon as every request is answered, while every connection attempt begun after the first ones
      // failed is still pending (see below).
      let deadline: NodeJS.Timeout | undefined;
      const givenUp = new Promise<undefined>((resolve) => {
        deadline = setTimeout(resolve, limits.holdAnswerWaitMs + 5_000, undefined);
      });
      refused = await Promise.race([Promise.all(sent), givenUp]);
      clearTimeout(deadline);
    } finally {
      thaw();
    }

    // Then: each was refused while the server was still frozen
    expect(refused, "every request answered before the thaw").toBeDefined();
    for (const outcome of refused!) expectLedgerUnavailable(outcome);

    // And once thawed: a hold placed late is voided, nothing refused is billed, the funds add up
    const pool = harness.service.ledger.pool;
    const refusedStreams = refused!.map((outcome) => `usage-${outcome.requestId}`);
    const typesOfRefused = async () =>
      (
        await pool.query<{ types: string[] }>(
          `SELECT array_agg(type ORDER BY stream_version) AS types FROM ledger_events
           WHERE stream_id = ANY($1) GROUP BY stream_id`,
          [refusedStreams],
        )
      ).rows.map((row) => row.types.join(","));
    // A request cut off at the hold's wait had its statement sent on a connection the pool kept open, or waits
    // for a new one whose attempt began once its lane's previous attempt failed (the pool's connect timeout,
    // 10 s after the freeze) and is pending at the thaw: it places its hold once thawed, and that hold is
    // voided. One refused sooner waited for a new connection, whose attempt failed, and sent nothing.
    const cutOffAtTheWait = refused!.filter((outcome) => outcome.tookMs >= limits.holdAnswerWaitMs).length;
    expect(cutOffAtTheWait).toBeGreaterThan(0);
    await expect.poll(async () => (await typesOfRefused()).length, { timeout: 30_000 }).toBe(cutOffAtTheWait);
    await expect
      .poll(async () => (await typesOfRefused()).every((types) => types === "UsageAuthorized,UsageVoided"), {
        timeout: 30_000,
      })
      .toBe(true);
    await expect
      .poll(async () => (await pool.query("SELECT 1 FROM open_holds")).rowCount, { timeout: 30_000 })
      .toBe(0);
    await expectBalanceIsCreditLessCharges(pool, { kind: "user", id: "frozen" }, creditWon);
    expect(
      await verifyProjections({ pool, store: harness.service.ledger.store, projections: allProjections }),
    ).toEqual([]);
  }, 120_000);
});
