import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HoldProgress, type RequestProgress } from "../../../src/billing/holds/hold-progress";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { holdRowCompletionOf } from "../../support/settled-holds";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * The progress record of a gateway's requests in flight (C10) also tells it which holds the orphan sweep
 * released meanwhile (it presumed the process dead): those requests are told, and no request delivers on a
 * confirmation older than the sweep could take to judge — while the database is away, it waits rather than
 * guess.
 */

const account = { kind: "user" as const, id: "progress-holds" };
const confirmationMaxAgeMs = 6_000;

/** A request's progress with this much output, no input reported, answered by the model requested. */
const outputOf = (outputTokens: number): RequestProgress => ({
  outputTokens,
  reportedInput: null,
  answeringModel: null,
});

describe("the progress record's confirmation of holds", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("hold_progress");
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "no-stream",
      events: [topUp(account.id, "1000", "progress holds")],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  /** Two holds placed now, as the gateway places them. */
  async function placedHolds(): Promise<[string, string]> {
    const holds = [0, 1].map(() => personalHoldRequest(`req_progress_${randomUUID()}`, account.id));
    const decisions = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage(holds);
    expect(decisions.map((decision) => decision.kind)).toEqual(["held", "held"]);
    return [holds[0]!.data.requestId, holds[1]!.data.requestId];
  }

  function progressWith(pool: HoldProgress["options"]["pool"], clock: { ms: number }) {
    return new HoldProgress({
      pool,
      gatewayInstance: "gateway-progress",
      progressIntervalMs: 2_000,
      holdLifetimeMs: 660_000,
      confirmationMaxAgeMs,
      logger: pino({ level: "silent" }),
      nowMs: () => clock.ms,
    });
  }

  it("given one hold released by the sweep, when the confirmation has aged, then that request is told and refused more output, the other goes on", async () => {
    const [released, running] = await placedHolds();
    const clock = { ms: 0 };
    const progress = progressWith(harness.ledger.pool, clock);
    const told: string[] = [];
    progress.track(
      released,
      () => outputOf(3),
      () => told.push(released),
      0,
    );
    progress.track(
      running,
      () => ({
        outputTokens: 5,
        reportedInput: { inputTokens: 2_200, cachedInputTokens: 800 },
        answeringModel: "delta-4.5-haiku",
      }),
      () => told.push(running),
      0,
    );
    expect(progress.stillHeld(released)).toBe(true);

    // The sweep settles the first hold (any settlement but the gateway's own closes its row).
    expect(
      await holdRowCompletionOf(harness.ledger.pool).voidIfOpen(released, randomUUID(), { actor: "test" }),
    ).toBe(true);
    clock.ms = confirmationMaxAgeMs + 1;

    expect(await progress.stillHeld(running)).toBe(true);
    expect(told).toEqual([released]);
    expect(await progress.stillHeld(released)).toBe(false);
    // Confirmed by that record: no statement until the confirmation ages again.
    expect(progress.stillHeld(running)).toBe(true);
    const recorded = await harness.ledger.pool.query(
      "SELECT output_tokens, input_tokens, cached_input_tokens, answering_model FROM hold_progress WHERE request_id = $1",
      [running],
    );
    expect(recorded.rows).toEqual([
      { output_tokens: 5, input_tokens: 2_200, cached_input_tokens: 800, answering_model: "delta-4.5-haiku" },
    ]);
  });

  it("given the database away when the confirmation has aged, then the output waits, and goes on once a record confirms the hold", async () => {
    const [, running] = await placedHolds();
    const clock = { ms: 0 };
    let away = true;
    const pool = {
      query: ((...args: Parameters<typeof harness.ledger.pool.query>) =>
        away
          ? Promise.reject(new Error("connection refused"))
          : harness.ledger.pool.query(...args)) as typeof harness.ledger.pool.query,
    };
    const progress = progressWith(pool, clock);
    progress.track(
      running,
      () => outputOf(1),
      () => {
        throw new Error("a hold still open is never told released");
      },
      0,
    );
    clock.ms = confirmationMaxAgeMs + 1;

    const waiting = progress.stillHeld(running);
    expect(waiting).toBeInstanceOf(Promise);
    const answer = await Promise.race([
      waiting,
      new Promise((resolve) => setTimeout(() => resolve("waiting"), 800)),
    ]);
    expect(answer).toBe("waiting");
    away = false;
    expect(await waiting).toBe(true);
  });

  it("given this process without its session, then no request relays output, a hold placed meanwhile neither, until the session is taken again and a record confirms", async () => {
    const [before, during] = await placedHolds();
    const clock = { ms: 0 };
    const progress = progressWith(harness.ledger.pool, clock);
    const stillOpen = () => {
      throw new Error("a hold still open is never told released");
    };
    progress.track(before, () => outputOf(2), stillOpen, 0);
    expect(progress.stillHeld(before)).toBe(true);

    // The session is lost (its connection reset): the sweep would keep nothing back for this process now
    progress.sessionLost();
    progress.track(during, () => outputOf(0), stillOpen, clock.ms);
    const waiting = [progress.stillHeld(before), progress.stillHeld(during)];
    expect(waiting.every((answer) => answer instanceof Promise)).toBe(true);
    // Records still go through (the database answers), but confirm nothing without the session
    const answer = await Promise.race([
      Promise.all(waiting),
      new Promise((resolve) => setTimeout(() => resolve("waiting"), 800)),
    ]);
    expect(answer).toBe("waiting");

    clock.ms += 1;
    progress.sessionTaken();
    clock.ms += 1;
    expect(await Promise.all(waiting)).toEqual([true, true]);
    expect(progress.stillHeld(before)).toBe(true);
  });

  it("given a hold placed before a pause longer than the confirmation's age, then its first output waits for a record, which finds it released", async () => {
    const [released] = await placedHolds();
    const clock = { ms: 1_000 };
    const progress = progressWith(harness.ledger.pool, clock);
    // The statement was asked for at 1 s; the process then stood still, and the sweep released the hold.
    const askedAtMs = clock.ms;
    await holdRowCompletionOf(harness.ledger.pool).voidIfOpen(released, randomUUID(), { actor: "test" });
    clock.ms += 16_000;
    const told: string[] = [];
    progress.track(
      released,
      () => outputOf(0),
      () => told.push(released),
      askedAtMs,
    );
    expect(await progress.stillHeld(released)).toBe(false);
    expect(told).toEqual([released]);
  });

  it("given a request settled by its own gateway, then it is no longer confirmed and never told released", async () => {
    const [settled] = await placedHolds();
    const clock = { ms: 0 };
    const progress = progressWith(harness.ledger.pool, clock);
    const untrack = progress.track(
      settled,
      () => outputOf(2),
      () => {
        throw new Error("a request settled here is never told released");
      },
      0,
    );
    untrack();
    await holdRowCompletionOf(harness.ledger.pool).voidIfOpen(settled, randomUUID(), { actor: "test" });
    clock.ms = confirmationMaxAgeMs + 1;
    await progress.record();
    expect(await progress.stillHeld(settled)).toBe(false);
  });
});
