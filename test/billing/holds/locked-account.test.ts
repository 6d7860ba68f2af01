import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { limits } from "../../../src/kernel/limits";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import {
  expectBalanceIsCreditLessCharges,
  expectBilledAsAnswered,
  expectLedgerUnavailable,
  type GenerationOutcome,
  sendChat,
} from "../../support/generation-outcomes";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "../../support/private-postgres-cluster";

/**
 * An operator's transaction left open on one account's funds row (`SELECT … FOR UPDATE`, 30 s and more): a
 * request on that account is answered 503/300 (C3: no generation without a hold) within twice the hold's
 * lock wait, never left waiting for as long as the transaction lasts; every other account is served
 * meanwhile, by the same gateway; once the transaction ends the account is served again, and every request
 * is billed as it ended — once (C10). On a server of its own: the operator's transaction, open for 30 s, holds
 * back what every database of its server may read of its logs (log-visibility.ts), other tests' too.
 */

const lockedFor = 30_000;
/** A request on the locked account: its batch's wait, then its own account's, each of two lock waits. */
const refusedWithinMs = 4 * limits.holdLockWaitMs + 2_000;
const creditWon = "10000";

describe("an account whose funds row an operator's transaction holds", () => {
  let cluster: PrivatePostgresCluster;
  let harness: GatewayHarness;
  let operator: pg.Client;
  const keys = new Map<string, string>();

  beforeAll(async () => {
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the locked account test");
    cluster = await createPrivatePostgresCluster("locked_account");
    harness = await startGatewayHarness({
      database: { url: cluster.url, name: "postgres", drop: async () => {} },
      billing: { redisUrl: process.env.REDIS_URL },
    });
    for (const account of ["locked", "free"]) {
      keys.set(account, (await harness.issueKey(await harness.session(account))).key);
      await harness.topUp({ kind: "user", id: account }, creditWon);
    }
    operator = new pg.Client({ connectionString: cluster.url });
    await operator.connect();
  }, 60_000);
  afterAll(async () => {
    await operator?.end();
    await harness?.close();
    await cluster?.drop();
  });

  const chat = (account: string, streamed: boolean) =>
    sendChat(harness.baseUrl, { account, key: keys.get(account)!, streamed, timeoutMs: lockedFor + 20_000 });

  it("answers that account 503/300 within the bound, serves the others meanwhile, and bills each request once", async () => {
    const outcomes: GenerationOutcome[] = [];
    // Both accounts served before: their holds' batches have both accounts' rows known to the gateway.
    for (const account of ["locked", "free"]) outcomes.push(await chat(account, false));
    expect(outcomes.map((outcome) => outcome.status)).toEqual([200, 200]);

    await operator.query("BEGIN");
    await operator.query(
      "SELECT * FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = 'locked' FOR UPDATE",
    );
    const lockedAtMs = Date.now();
    // Both accounts at once, both ways: their holds share a batch, which meets the held row.
    const together = await Promise.all([
      chat("locked", false),
      chat("locked", true),
      chat("free", false),
      chat("free", true),
    ]);
    outcomes.push(...together);
    // Then, while the transaction lasts, both accounts at once, round after round.
    const upstreamCallsBefore = harness.simulator.receivedRequestCount();
    const meanwhile: GenerationOutcome[] = [];
    for (let round = 0; Date.now() - lockedAtMs < lockedFor; round++) {
      // A hold placed just before: the gateway does not take the ledger for failing.
      meanwhile.push(await chat("free", false));
      const [locked, ...free] = await Promise.all([
        chat("locked", round % 2 === 0),
        ...Array.from({ length: 4 }, (_, index) => chat("free", index % 2 === 0)),
      ]);
      meanwhile.push(locked!, ...free);
    }
    outcomes.push(...meanwhile);
    const upstreamCallsMeanwhile = harness.simulator.receivedRequestCount() - upstreamCallsBefore;
    await operator.query("ROLLBACK");

    const lockedOutcomes = [...together, ...meanwhile].filter((outcome) => outcome.account === "locked");
    for (const outcome of lockedOutcomes) {
      expectLedgerUnavailable(outcome);
      expect(outcome.tookMs).toBeLessThan(refusedWithinMs);
    }
    const freeOutcomes = [...together, ...meanwhile].filter((outcome) => outcome.account === "free");
    expect(freeOutcomes.map((outcome) => outcome.status)).toEqual(freeOutcomes.map(() => 200));
    // Those beside the first refusal waited for one statement (two lock waits) at most; after it, the free
    // account is served as usual.
    for (const outcome of together.filter((each) => each.account === "free"))
      expect(outcome.tookMs).toBeLessThan(2 * limits.holdLockWaitMs + 1_500);
    for (const outcome of meanwhile.filter((each) => each.account === "free"))
      expect(outcome.tookMs).toBeLessThan(2_000);
    // Once set apart, the held account's requests hold before calling the upstream: none reached it.
    expect(upstreamCallsMeanwhile).toBe(meanwhile.filter((outcome) => outcome.account === "free").length);

    // The transaction over, the account is served again.
    const after = [await chat("locked", false), await chat("locked", true)];
    outcomes.push(...after);
    expect(after.map((outcome) => outcome.status)).toEqual([200, 200]);

    await expectBilledAsAnswered(harness.service.ledger, outcomes);
    for (const account of ["locked", "free"])
      await expectBalanceIsCreditLessCharges(
        harness.service.ledger.pool,
        { kind: "user", id: account },
        creditWon,
      );
  }, 180_000);
});
