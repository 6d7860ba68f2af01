import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { topUpCredit } from "../../../src/billing/commands/top-up-credit";
import { toApiError } from "../../../src/gateway/middleware/error-handler";
import { Money } from "../../../src/kernel/money";
import { ProjectionWaiter } from "../../../src/ledger/projection/projection-waiter";
import { RecordedNotVisibleError } from "../../../src/ledger/projection/recorded-not-visible";
import type { EventStore } from "../../../src/ledger/store/event-store";
import { type Ledger, openLedger } from "../../../src/ledger/store/open-ledger";
import { type ConnectionCutter, cutterInFrontOf } from "../../support/connection-cutter";
import { createTestDatabase, type TestDatabase } from "../../support/database";

/**
 * A write whose append committed and whose reading back then failed — PostgreSQL gone between the two — is
 * answered as recorded but not visible (503, x-should-retry: false), never as "unavailable, try again":
 * a client sending the same top-up again without its Idempotency-Key would be credited twice.
 */

describe("a top-up whose reading back fails after its append", () => {
  let database: TestDatabase;
  let cutter: ConnectionCutter;
  let ledger: Ledger;
  let waiter: ProjectionWaiter;
  const account = { kind: "user", id: "read-back" } as const;

  beforeAll(async () => {
    database = await createTestDatabase("recorded_not_visible");
    const behindCutter = await cutterInFrontOf(database.url);
    cutter = behindCutter.cutter;
    ledger = await openLedger({
      databaseUrl: behindCutter.url,
      applicationName: "test-recorded-not-visible",
    });
    waiter = new ProjectionWaiter(ledger.pool, behindCutter.url, 50);
  });
  afterAll(async () => {
    cutter?.restore();
    await waiter?.close();
    await ledger?.close();
    await cutter?.close();
    await database?.drop();
  });
  beforeEach(() => cutter.restore());

  /** The real store, whose connections to PostgreSQL are cut the moment an append has committed. */
  function storeCutAfterAppend(): EventStore {
    return new Proxy(ledger.store, {
      get(target, property, receiver) {
        if (property === "append")
          return async (...args: Parameters<EventStore["append"]>) => {
            const appended = await target.append(...args);
            cutter.cut();
            return appended;
          };
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  async function creditsOfAccount(): Promise<number> {
    const events = await ledger.store.readStream(`account-${account.kind}-${account.id}`);
    return events.filter((event) => event.type === "CreditToppedUp").length;
  }

  it.each([
    ["waits for its projections", undefined],
    ["reads back its Idempotency-Key's event", "read-back-key"],
  ])(
    "given PostgreSQL gone as it %s, then it is recorded once and answered as recorded, not visible",
    async (_step, idempotencyKey) => {
      const creditsBefore = await creditsOfAccount();

      const failure = await topUpCredit(
        {
          store: storeCutAfterAppend(),
          waiter,
          database: ledger.pool,
          clock: () => new Date(),
          projectionWaitTimeoutMs: 2_000,
        },
        { account, amountWon: new Money(5_000), reference: "cut", idempotencyKey },
        { actor: "admin" },
      ).then(
        () => undefined,
        (error: unknown) => error,
      );

      expect(failure).toBeInstanceOf(RecordedNotVisibleError);
      const answer = toApiError(failure);
      expect({
        status: answer.httpStatus,
        code: answer.applicationCode,
        sendAgainSafe: answer.sendAgainSafe,
      }).toEqual({ status: 503, code: 300, sendAgainSafe: false });
      cutter.restore();
      expect(await creditsOfAccount()).toBe(creditsBefore + 1);
    },
  );
});
