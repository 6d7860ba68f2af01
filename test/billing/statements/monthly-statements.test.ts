import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balancesProjection } from "../../../projections/balances";
import { billingHistoryProjection, billingHistoryTable } from "../../../projections/billing-history";
import { monthlyStatementsProjection } from "../../../projections/monthly-statements";
import type { MonthlyStatement } from "../../../src/billing/statements/monthly-statement";
import { formatMoney, Money, parseMoney, sumMoney } from "../../../src/kernel/money";
import { sealCheckpoints } from "../../../src/ledger/integrity/ledger-checkpointer";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import type { RecordedEventOf } from "../../../src/ledger/store/event-store";
import { compareLogPositions, parseLogPosition } from "../../../src/ledger/store/log-position";
import {
  type BillingApiHarness,
  chargeRecordedUsage,
  startBillingApi,
} from "../../gateway/admin/billing-api-harness";
import {
  parseCsv,
  parseCsvRecords,
  readPricingHistory,
  recomputedAmounts,
  sumOf,
  termsInForce,
} from "../../support/charges-from-history";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";
import { discountSet, fxRateUpdated, modelPriceSet } from "../billing-ledger-fixtures";
import { holdAt, type StatementUsage, topUpAt, usageAt, voidOf } from "./statement-ledger";

/**
 * Given a user's September, October and November — top-ups, charges over two models and two keys, a discount
 * that changes on 15 October, requests started on either side of Seoul's midnight, each day's FX rate
 * recorded at 00:05 KST — then October's statement adds up to the micro-won, its CSV says the same, the
 * session sees its own, and the finance export of each month recomputes line by line from the price,
 * discount and FX histories and sums exactly to the statements' charges.
 */

const user = { kind: "user", id: "statement-user" } as const;
const other = { kind: "organization", id: "statement-org" } as const;
const keyA = "0b7d0c9e-1111-4a4a-8b8b-000000000001";
const keyB = "0b7d0c9e-2222-4a4a-8b8b-000000000002";
const keyOther = "0b7d0c9e-3333-4a4a-8b8b-000000000003";
const signingKey = LedgerSigningKey.parse(Buffer.alloc(32, 3).toString("base64"));
const tokens = (input: number, output: number) => ({
  input,
  cached: Math.floor(input / 4),
  output,
  reasoning: 0,
});

// Requests, each with the month its start falls in (Seoul).
const usages: (StatementUsage & { month: string })[] = [
  {
    requestId: "st-sep-1",
    account: user,
    keyId: keyA,
    model: "alpha-5.4",
    startedAt: "2026-09-20T03:00:00.000Z",
    tokens: tokens(40_000, 9_000),
    month: "2026-09",
  },
  // 2026-09-30 23:59:30 KST: September, though charged in October.
  {
    requestId: "st-sep-2",
    account: user,
    keyId: keyA,
    model: "alpha-5.4",
    startedAt: "2026-09-30T14:59:30.000Z",
    tokens: tokens(12_345, 6_789),
    month: "2026-09",
  },
  // 2026-10-01 00:00:00 KST: October, though still 30 September in UTC.
  {
    requestId: "st-oct-1",
    account: user,
    keyId: keyA,
    model: "alpha-5.4",
    startedAt: "2026-09-30T15:00:00.000Z",
    tokens: tokens(1_000, 333),
    month: "2026-10",
  },
  {
    requestId: "st-oct-2",
    account: user,
    keyId: keyB,
    model: "delta-4.5-haiku",
    startedAt: "2026-10-08T05:00:00.000Z",
    tokens: tokens(77_777, 11_111),
    month: "2026-10",
  },
  {
    requestId: "st-oct-3",
    account: user,
    keyId: keyB,
    model: "alpha-5.4",
    startedAt: "2026-10-16T05:00:00.000Z",
    tokens: tokens(5_555, 4_444),
    month: "2026-10",
  },
  {
    requestId: "st-oct-4",
    account: user,
    keyId: keyA,
    model: "delta-4.5-haiku",
    startedAt: "2026-10-25T05:00:00.000Z",
    tokens: tokens(3_210, 987),
    month: "2026-10",
  },
  {
    requestId: "st-oct-other",
    account: other,
    keyId: keyOther,
    model: "alpha-5.4",
    startedAt: "2026-10-10T05:00:00.000Z",
    tokens: tokens(9_999, 999),
    month: "2026-10",
  },
  // 2026-10-01 00:05:00 KST, the instant 1 October's rate is recorded: that rate is in force.
  {
    requestId: "st-oct-other-fx",
    account: other,
    keyId: keyOther,
    model: "delta-4.5-haiku",
    startedAt: "2026-09-30T15:05:00.000Z",
    tokens: tokens(31_415, 9_265),
    month: "2026-10",
  },
  // Charged from the orphan sweep's estimate, then corrected to nothing: the gateway delivered nothing.
  {
    requestId: "st-oct-voided",
    account: other,
    keyId: keyOther,
    model: "alpha-5.4",
    startedAt: "2026-10-12T05:00:00.000Z",
    tokens: tokens(4_000, 1_000),
    month: "2026-10",
  },
  // 2026-11-01 00:00:05 KST: November.
  {
    requestId: "st-nov-1",
    account: user,
    keyId: keyA,
    model: "alpha-5.4",
    startedAt: "2026-10-31T15:00:05.000Z",
    tokens: tokens(2_000, 500),
    month: "2026-11",
  },
];

let api: BillingApiHarness;
const chargeOf = new Map<string, RecordedEventOf<"UsageCharged">>();
const correctionOf = new Map<string, RecordedEventOf<"UsageCharged">>();

async function statementOf(path: string): Promise<MonthlyStatement> {
  const response = await api.admin("GET", path);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as MonthlyStatement;
}

const monthCharges = (account: { id: string }, month: string) =>
  usages
    .filter((usage) => usage.account.id === account.id && usage.month === month)
    .map((usage) => chargeOf.get(usage.requestId)!);

beforeAll(async () => {
  api = await startBillingApi("monthly_statements");
  const settingsAt = "2026-08-31T15:00:00.000Z"; // 2026-09-01 00:00 KST
  await api.ledger.append(
    modelPriceSet("alpha-5.4", { input: "1.25", cachedInput: "0.125", output: "10" }, settingsAt),
    modelPriceSet("delta-4.5-haiku", { input: "3", cachedInput: "0.3", output: "15" }, settingsAt),
    fxRateUpdated({ appliesOn: "2026-09-01", rateDate: "2026-08-31", rateKrwPerUsd: "1391.7" }, settingsAt),
    // The last day of September and the first of October each get their rate at 00:05 KST: a request in the
    // five minutes before is priced at the day before's.
    fxRateUpdated(
      { appliesOn: "2026-09-30", rateDate: "2026-09-29", rateKrwPerUsd: "1388.25" },
      "2026-09-29T15:05:00.000Z",
    ),
    fxRateUpdated(
      { appliesOn: "2026-10-01", rateDate: "2026-09-30", rateKrwPerUsd: "1402.125" },
      "2026-09-30T15:05:00.000Z",
    ),
    // The discount changes mid-October: 10% off from 15 October 00:00 KST.
    discountSet(null, null, "0.1", "2026-10-14T15:00:00.000Z"),
    topUpAt(user, "10000", "september", "2026-09-10T01:00:00.000Z"),
    topUpAt(user, "5000", 'first of october, "KST"', "2026-09-30T15:00:00.000Z"),
    topUpAt(user, "2500.5", "october", "2026-10-20T01:00:00.000Z"),
    topUpAt(user, "100", "november", "2026-11-02T01:00:00.000Z"),
    topUpAt(other, "50000", "organization", "2026-10-02T01:00:00.000Z"),
    ...usages.map(usageAt),
  );
  for (const usage of usages) await chargeRecordedUsage(api, usage.requestId);
  // A late settlement (C10): the gateway that served st-oct-2 records what it delivered after the orphan
  // sweep's estimate was charged; the reconciler charges the difference.
  const [estimate] = await api.ledger.store.readStream("usage-st-oct-2");
  const corrected = usageAt({ ...usages[3]!, tokens: tokens(80_000, 12_000) });
  const correcting = corrected.events[0]!.event as { data: Record<string, unknown> };
  correcting.data.heldWon = "0";
  correcting.data.corrects = { eventId: estimate!.eventId, pendingWon: "0" };
  await api.ledger.append({ ...corrected, expectedVersion: "any" });
  await chargeRecordedUsage(api, "st-oct-2");
  // And st-oct-voided's gateway, alive after all, delivered nothing: its correction is to nothing.
  const [voidedEstimate] = await api.ledger.store.readStream("usage-st-oct-voided");
  const voided = usageAt({
    ...usages.find((usage) => usage.requestId === "st-oct-voided")!,
    tokens: { input: 0, cached: null, output: 0, reasoning: null },
  });
  const voiding = voided.events[0]!.event as { data: Record<string, unknown> };
  voiding.data.heldWon = "0";
  voiding.data.usageSource = "estimated";
  voiding.data.corrects = { eventId: voidedEstimate!.eventId, pendingWon: "0" };
  await api.ledger.append({ ...voided, expectedVersion: "any" });
  await chargeRecordedUsage(api, "st-oct-voided");
  let last = parseLogPosition("0-0");
  for (const usage of usages) {
    const stream = await api.ledger.store.readStream(`usage-${usage.requestId}`);
    const [charge, correction] = stream.filter(
      (event) => event.type === "UsageCharged",
    ) as RecordedEventOf<"UsageCharged">[];
    chargeOf.set(usage.requestId, charge!);
    if (correction) correctionOf.set(usage.requestId, correction);
    for (const event of [charge!, ...(correction ? [correction] : [])])
      if (compareLogPositions(event.position, last) > 0) last = event.position;
  }
  await api.waiter.waitFor(
    last,
    [monthlyStatementsProjection.name, billingHistoryProjection.name, balancesProjection.name],
    10_000,
  );
  await api.ledger.visible();
  const client = await api.ledger.ledger.pool.connect();
  try {
    await sealCheckpoints(client, signingKey, {
      eventsMax: 10_000,
      intervalMs: 0,
      checkpointsMax: 10,
      sealPartial: true,
    });
  } finally {
    client.release();
  }
}, 120_000);

afterAll(async () => {
  await api?.close();
});

describe("monthly statements", () => {
  it("given a month of top-ups, charges and a discount change, then its identity holds to the micro-won", async () => {
    // When
    const statement = await statementOf(`/statements/user/${user.id}?month=2026-10`);

    // Then: the discount in force at each request's start
    expect(chargeOf.get("st-oct-2")!.data.breakdown.discountRate).toBe("0");
    expect(chargeOf.get("st-oct-3")!.data.breakdown.discountRate).toBe("0.1");
    const september = sumMoney(
      monthCharges(user, "2026-09").map((charge) => parseMoney(charge.data.amountWon)),
    );
    const october = monthCharges(user, "2026-10");
    const charged = sumMoney(october.map((charge) => parseMoney(charge.data.amountWon)));
    const correction = correctionOf.get("st-oct-2")!;
    // The delivered usage was larger: the correction adds the difference, exactly.
    expect(correction.data.correction?.correctedAmountWon).toBe(chargeOf.get("st-oct-2")!.data.amountWon);
    expect(
      parseMoney(correction.data.amountWon).equals(
        parseMoney(correction.data.breakdown.amountWon).minus(chargeOf.get("st-oct-2")!.data.amountWon),
      ),
    ).toBe(true);
    expect(parseMoney(correction.data.amountWon).isPositive()).toBe(true);
    expect(statement).toMatchObject({
      account: user,
      month: "2026-10",
      from: "2026-09-30T15:00:00.000Z",
      to: "2026-10-31T15:00:00.000Z",
      openingBalanceWon: formatMoney(new Money(10_000).minus(september)),
      topUpsWon: "7500.5",
      chargesWon: formatMoney(charged),
      correctionsWon: formatMoney(parseMoney(correction.data.amountWon)),
      chargeCount: 4,
      provisional: false,
    });
    expect(
      parseMoney(statement.openingBalanceWon)
        .plus(statement.topUpsWon)
        .minus(statement.chargesWon)
        .minus(statement.correctionsWon)
        .equals(parseMoney(statement.closingBalanceWon)),
    ).toBe(true);
    expect(statement.topUps.map((topUp) => [topUp.amountWon, topUp.reference])).toEqual([
      ["5000", 'first of october, "KST"'],
      ["2500.5", "october"],
    ]);
    const byModel = (model: string) =>
      sumMoney(
        october
          .filter((charge) => charge.data.model === model)
          .map((charge) => parseMoney(charge.data.amountWon)),
      );
    expect(statement.chargesByModel).toEqual([
      { model: "alpha-5.4", requests: 2, amountWon: formatMoney(byModel("alpha-5.4")) },
      { model: "delta-4.5-haiku", requests: 2, amountWon: formatMoney(byModel("delta-4.5-haiku")) },
    ]);
    expect(statement.chargesByKey.map((group) => [group.keyId, group.requests])).toEqual([
      [keyA, 2],
      [keyB, 2],
    ]);
    expect(statement.corrections).toEqual([
      {
        requestId: "st-oct-2",
        keyId: keyB,
        keyName: null,
        model: "delta-4.5-haiku",
        occurredAt: correction.metadata.occurredAt,
        amountWon: formatMoney(parseMoney(correction.data.amountWon)),
        correctedAmountWon: formatMoney(parseMoney(chargeOf.get("st-oct-2")!.data.amountWon)),
      },
    ]);
  });

  it("prices a request by the FX rate recorded by its start across Seoul's month boundary, and recomputes every export line of each month from the histories", async () => {
    // Then: 23:59:30 on 30 September and 00:00:00 on 1 October KST both take 30 September's rate (1 October's
    // is recorded at 00:05); a request at 00:05:00 takes 1 October's
    const fxOf = (requestId: string) => {
      const { breakdown } = chargeOf.get(requestId)!.data;
      return [breakdown.fxRateKrwPerUsd, breakdown.fxRateDate];
    };
    expect(fxOf("st-sep-1")).toEqual(["1391.7", "2026-08-31"]);
    expect(fxOf("st-sep-2")).toEqual(["1388.25", "2026-09-29"]);
    expect(fxOf("st-oct-1")).toEqual(["1388.25", "2026-09-29"]);
    expect(fxOf("st-oct-other-fx")).toEqual(["1402.125", "2026-09-30"]);
    const history = await readPricingHistory((path) => api.admin("GET", path));
    const owner = (line: Record<string, string>) => `${line.account_kind}:${line.account_id}`;
    for (const month of ["2026-09", "2026-10", "2026-11"]) {
      const response = await api.admin("GET", `/exports/charges?month=${month}`);
      expect(response.status).toBe(200);
      const lines = parseCsvRecords(await response.text());
      // Each request in the month it started in, whenever it was charged (every one on 20 November)
      expect(lines.map((line) => line.request_id).sort(), month).toEqual(
        usages
          .filter((usage) => usage.month === month)
          .map((usage) => usage.requestId)
          .sort(),
      );
      for (const line of lines) {
        const terms = termsInForce(line, history);
        expect(
          [line.input_usd_per_million_tokens, line.cached_input_usd_per_million_tokens],
          line.request_id,
        ).toEqual([terms.inputUsdPer1M, terms.cachedInputUsdPer1M]);
        expect(
          [
            line.output_usd_per_million_tokens,
            line.fx_rate_krw_per_usd,
            line.fx_rate_date,
            line.discount_rate,
          ],
          line.request_id,
        ).toEqual([terms.outputUsdPer1M, terms.fxRate, terms.fxRateDate, terms.discountRate]);
        expect([line.usd, line.amount_won], line.request_id).toEqual(
          Object.values(recomputedAmounts(line, terms)),
        );
      }
      // And each account's lines sum to its statement's charges and corrections
      for (const account of new Set(lines.map(owner))) {
        const [kind, id] = account.split(":");
        const statement = await statementOf(`/statements/${kind}/${id}?month=${month}`);
        const own = lines.filter((line) => owner(line) === account).map((line) => line.amount_won!);
        expect(sumOf(own), `${account} ${month}`).toBe(
          sumOf([statement.chargesWon, statement.correctionsWon]),
        );
      }
    }
    // A request corrected to nothing: charged its estimate, paid back whole, a line of ₩0
    const october = await statementOf(`/statements/organization/${other.id}?month=2026-10`);
    const estimate = chargeOf.get("st-oct-voided")!.data.amountWon;
    expect(october.corrections).toEqual([
      expect.objectContaining({
        requestId: "st-oct-voided",
        amountWon: formatMoney(parseMoney(estimate).negated()),
        correctedAmountWon: formatMoney(parseMoney(estimate)),
      }),
    ]);
    expect(october.chargeCount).toBe(3);
  });

  it("given its month's row damaged by one micro-won, then the statement is refused 500, never shown as if true", async () => {
    // Given: the month's charges, as the projection keeps them, one micro-won off its charge lines
    const damage = (by: string) =>
      api.ledger.ledger.pool.query(
        `UPDATE projection_statement_months SET charges_won = charges_won + $3::numeric
         WHERE account_kind = $1 AND account_id = $2 AND month = '2026-10'`,
        [user.kind, user.id, by],
      );
    const shown = await statementOf(`/statements/user/${user.id}?month=2026-10`);
    await damage("0.000001");
    try {
      // When
      const response = await api.admin("GET", `/statements/user/${user.id}?month=2026-10`);

      // Then: the error body, naming none of its amounts
      expect(response.status).toBe(500);
      const body = await response.text();
      expect(JSON.parse(body)).toMatchObject({ status: expect.any(Number), message: expect.any(String) });
      expect(body).not.toContain(shown.chargesWon);
      expect(body).not.toContain(shown.closingBalanceWon);
    } finally {
      await damage("-0.000001");
    }
    expect(await statementOf(`/statements/user/${user.id}?month=2026-10`)).toMatchObject({
      chargesWon: shown.chargesWon,
    });
  });

  it("names the signed checkpoint that seals every event it sums", async () => {
    const statement = await statementOf(`/statements/user/${user.id}?month=2026-10`);
    expect(statement.checkpoint).not.toBeNull();
    expect(statement.checkpoint!.publicKey).toBe(signingKey.publicKey.toString("hex"));
    const sealedThrough = parseLogPosition(statement.checkpoint!.last);
    for (const charge of [
      ...monthCharges(user, "2026-09"),
      ...monthCharges(user, "2026-10"),
      correctionOf.get("st-oct-2")!,
    ])
      expect(compareLogPositions(charge.position, sealedThrough)).toBeLessThanOrEqual(0);
  });

  it("closes each month on the next one's opening, the last month on the account's balance", async () => {
    const september = await statementOf(`/statements/user/${user.id}?month=2026-09`);
    const october = await statementOf(`/statements/user/${user.id}?month=2026-10`);
    const november = await statementOf(`/statements/user/${user.id}?month=2026-11`);
    expect(september.openingBalanceWon).toBe("0");
    expect(october.openingBalanceWon).toBe(september.closingBalanceWon);
    expect(november.openingBalanceWon).toBe(october.closingBalanceWon);
    // November is still within its settlement grace on the harness's clock (2026-11-20): provisional.
    expect(november.provisional).toBe(true);
    const balance = await api.ledger.ledger.pool.query<{ balance_won: string }>(
      "SELECT balance_won::text AS balance_won FROM projection_balances WHERE account_kind = 'user' AND account_id = $1",
      [user.id],
    );
    expect(parseMoney(november.closingBalanceWon).equals(parseMoney(balance.rows[0]!.balance_won))).toBe(
      true,
    );
  });

  it("says the same in CSV as in JSON", async () => {
    const statement = await statementOf(`/statements/user/${user.id}?month=2026-10`);
    const response = await api.admin("GET", `/statements/user/${user.id}?month=2026-10&format=csv`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/csv");
    const rows = parseCsv(await response.text());
    expect(rows[0]).toEqual(["section", "id", "date", "description", "count", "amount_won"]);
    const amountOf = (section: string, id: string) =>
      rows.find((row) => row[0] === section && row[1] === id)?.[5];
    expect(amountOf("summary", "opening_balance")).toBe(statement.openingBalanceWon);
    expect(amountOf("summary", "top_ups")).toBe(statement.topUpsWon);
    expect(amountOf("summary", "charges")).toBe(statement.chargesWon);
    expect(amountOf("summary", "corrections")).toBe(statement.correctionsWon);
    expect(amountOf("summary", "closing_balance")).toBe(statement.closingBalanceWon);
    expect(rows.filter((row) => row[0] === "top_up").map((row) => [row[3], row[5]])).toEqual(
      statement.topUps.map((topUp) => [topUp.reference, topUp.amountWon]),
    );
    for (const group of statement.chargesByModel)
      expect(amountOf("charges_by_model", group.model!)).toBe(group.amountWon);
    for (const group of statement.chargesByKey)
      expect(amountOf("charges_by_key", group.keyId!)).toBe(group.amountWon);
    expect(rows.find((row) => row[1] === "provisional")?.[3]).toBe("false");
    expect(rows.find((row) => row[1] === "checkpoint")?.[3]).toBe(
      `#${statement.checkpoint!.sequence} ${statement.checkpoint!.checkpointHash}`,
    );
  });

  it("lists every charge line on request, in JSON and CSV, summing to the charges and corrections", async () => {
    const statement = (await statementOf(
      `/statements/user/${user.id}?month=2026-10&lines=charges`,
    )) as MonthlyStatement & {
      charges: { requestId: string; amountWon: string }[];
    };
    expect(statement.charges.map((charge) => charge.requestId).sort()).toEqual([
      "st-oct-1",
      "st-oct-2",
      "st-oct-3",
      "st-oct-4",
    ]);
    // Each request once, at what it was finally charged (a corrected one at its delivered usage's charge).
    const delivered = parseMoney(statement.chargesWon).plus(statement.correctionsWon).toFixed(6);
    expect(sumMoney(statement.charges.map((charge) => parseMoney(charge.amountWon))).toFixed(6)).toBe(
      delivered,
    );
    const csv = parseCsv(
      await (
        await api.admin("GET", `/statements/user/${user.id}?month=2026-10&lines=charges&format=csv`)
      ).text(),
    );
    const lines = csv.filter((row) => row[0] === "charge");
    expect(lines.map((row) => row[1]).sort()).toEqual(
      statement.charges.map((charge) => charge.requestId).sort(),
    );
    expect(sumMoney(lines.map((row) => parseMoney(row[5]!))).toFixed(6)).toBe(delivered);
  });

  it("exports the month's charges of every account, with the billing history's columns, summing to the statements", async () => {
    const response = await api.admin("GET", "/exports/charges?month=2026-10");
    expect(response.status).toBe(200);
    const rows = parseCsv(await response.text());
    const billingHistory = parseCsv(
      await (await api.admin("GET", `/billing?account=user:${user.id}&format=csv`)).text(),
    );
    expect(rows[0]).toEqual(billingHistory[0]);
    const column = rows[0]!.indexOf("amount_won");
    const accountColumn = rows[0]!.indexOf("account_id");
    const charges = rows.slice(1);
    expect(charges.map((row) => row[0]).sort()).toEqual([
      "st-oct-1",
      "st-oct-2",
      "st-oct-3",
      "st-oct-4",
      "st-oct-other",
      "st-oct-other-fx",
      "st-oct-voided",
    ]);
    const userStatement = await statementOf(`/statements/user/${user.id}?month=2026-10`);
    const otherStatement = await statementOf(`/statements/organization/${other.id}?month=2026-10`);
    const sumOf = (selected: string[][]) =>
      sumMoney(selected.map((row) => parseMoney(row[column]!))).toFixed(6);
    // One row per request at its final charge: the charges and the corrections of the month's statements.
    const finalOf = (statement: MonthlyStatement) =>
      parseMoney(statement.chargesWon).plus(statement.correctionsWon);
    expect(sumOf(charges.filter((row) => row[accountColumn] === user.id))).toBe(
      finalOf(userStatement).toFixed(6),
    );
    expect(sumOf(charges)).toBe(finalOf(userStatement).plus(finalOf(otherStatement)).toFixed(6));
  });

  it("gives a session its own statement, and refuses what the session has no account for", async () => {
    const token = await api.session(user.id, null);
    const response = await fetch(`${api.url}/llm/statements?account=personal&month=2026-10`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    const statement = (await response.json()) as MonthlyStatement;
    expect(statement).toMatchObject({ account: user, chargeCount: 4 });
    const organization = await fetch(`${api.url}/llm/statements?account=organization&month=2026-10`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(organization.status).toBe(400);
    expect(await organization.json()).toMatchObject({ status: 100 });
    const member = await api.session("member", other.id);
    const organizationStatement = await fetch(
      `${api.url}/llm/statements?account=organization&month=2026-10&format=csv`,
      {
        headers: { authorization: `Bearer ${member}` },
      },
    );
    expect(organizationStatement.status).toBe(200);
    expect(await organizationStatement.text()).toContain(`organization:${other.id}`);
  });

  it("given no month, gives a session the current Asia/Seoul month's statement (the clock: 2026-11-20 KST)", async () => {
    const token = await api.session(user.id, null);
    const response = await fetch(`${api.url}/llm/statements`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    const statement = (await response.json()) as MonthlyStatement;
    expect(statement).toMatchObject({ account: user, month: "2026-11" });
    expect(statement).toEqual(await statementOf(`/statements/user/${user.id}?month=2026-11`));
  });

  it.each(["2026-13", "2026-1", "26-10", "", "2026-10-01", "1969-12", "9999-12"])(
    "refuses the month %j with 400/100",
    async (month) => {
      const response = await api.admin(
        "GET",
        `/statements/user/${user.id}?month=${encodeURIComponent(month)}`,
      );
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ status: 100 });
    },
  );

  it("refuses an export without a valid month, and a statement without a session", async () => {
    const export_ = await api.admin("GET", "/exports/charges?month=October");
    expect(export_.status).toBe(400);
    expect(await export_.json()).toMatchObject({ status: 100 });
    const anonymous = await fetch(`${api.url}/llm/statements?month=2026-10`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ status: 110 });
  });

  it("gives an account with no activity a zero statement, not an error", async () => {
    const statement = await statementOf("/statements/user/nobody?month=2026-10");
    expect(statement).toMatchObject({
      openingBalanceWon: "0",
      closingBalanceWon: "0",
      chargeCount: 0,
      checkpoint: null,
      topUps: [],
      chargesByModel: [],
    });
  });

  it("keeps a month provisional past its grace while a request started in it holds funds, final once it settles", async () => {
    const streaming = {
      requestId: "st-oct-late-stream",
      account: { kind: "user", id: "statement-streamer" } as const,
      keyId: keyA,
      model: "alpha-5.4",
      // 2026-10-31 23:50 KST: October, and still streaming after the month's grace (the clock: 2026-11-20).
      startedAt: "2026-10-31T14:50:00.000Z",
    };
    const path = `/statements/user/${streaming.account.id}?month=2026-10`;
    // The open hold is an inline read model, current once its append commits: no projection to wait for.
    await api.ledger.append(holdAt(streaming, "12.5"));
    expect((await statementOf(path)).provisional).toBe(true);
    await api.ledger.append(voidOf(streaming, "12.5"));
    expect((await statementOf(path)).provisional).toBe(false);
  });

  it("keeps a month provisional past its grace while a request started in it runs on its hold row, final once the row goes", async () => {
    const userId = "statement-row-streamer";
    const path = `/statements/user/${userId}?month=2026-10`;
    await api.ledger.append(
      topUpAt({ kind: "user", id: userId }, "100", "row streamer", "2026-10-02T00:00:00.000Z"),
    );
    await api.ledger.visible();
    // A stream started at 2026-10-31 23:50 KST, still running: its hold is a row, nothing of it in the log.
    const [decision] = await usageAuthorizationsOf(api.ledger.ledger.pool, api.ledger.store).authorizeUsage([
      personalHoldRequest("st-oct-row-stream", userId, { startedAt: "2026-10-31T14:50:00.000Z" }),
    ]);
    expect(decision).toMatchObject({ kind: "held" });
    expect((await statementOf(path)).provisional).toBe(true);
    await api.ledger.ledger.pool.query("DELETE FROM request_holds WHERE request_id = 'st-oct-row-stream'");
    expect((await statementOf(path)).provisional).toBe(false);
  });

  it("answers a HEAD of the export or of a statement with its charge lines with the GET's headers, reading none of the charges", async () => {
    const paths = [
      "/exports/charges?month=2026-10",
      `/statements/user/${user.id}?month=2026-10&lines=charges&format=csv`,
      `/statements/user/${user.id}?month=2026-10&lines=charges`,
    ];
    const gets = [];
    for (const path of paths) {
      const response = await api.admin("GET", path);
      expect((await response.text()).length).toBeGreaterThan(0);
      gets.push(response);
    }
    const locker = await api.ledger.ledger.pool.connect();
    try {
      await locker.query("BEGIN");
      // A read of the charges would wait behind this lock: a HEAD that answers has read none.
      await locker.query(`LOCK TABLE ${billingHistoryTable.name} IN ACCESS EXCLUSIVE MODE`);
      for (const [index, path] of paths.entries()) {
        const head = await Promise.race([
          api.admin("HEAD", path),
          new Promise<never>((_resolve, reject) =>
            setTimeout(() => reject(new Error(`HEAD ${path} waited to read the charges`)), 5_000),
          ),
        ]);
        expect(head.status).toBe(200);
        expect(await head.text()).toBe("");
        for (const header of ["content-type", "content-disposition", "x-export-provisional"])
          expect(head.headers.get(header)).toBe(gets[index]!.headers.get(header));
      }
    } finally {
      await locker.query("ROLLBACK");
      locker.release();
    }
  });

  it("names an export of a month that may still change provisional, in its file name and a header", async () => {
    const exportOf = async (month: string) => {
      const response = await api.admin("GET", `/exports/charges?month=${month}`);
      await response.text();
      return {
        file: response.headers.get("content-disposition"),
        provisional: response.headers.get("x-export-provisional"),
      };
    };
    // November is within its settlement grace on the harness's clock (2026-11-20); October is past it.
    expect(await exportOf("2026-11")).toEqual({
      file: "attachment; filename=charges-2026-11-provisional.csv",
      provisional: "true",
    });
    expect(await exportOf("2026-10")).toEqual({
      file: "attachment; filename=charges-2026-10.csv",
      provisional: "false",
    });
    // Any account's request started in October and still running keeps October's export provisional.
    const [decision] = await usageAuthorizationsOf(api.ledger.ledger.pool, api.ledger.store).authorizeUsage([
      personalHoldRequest("st-oct-export-stream", user.id, { startedAt: "2026-10-31T14:50:00.000Z" }),
    ]);
    expect(decision).toMatchObject({ kind: "held" });
    expect(await exportOf("2026-10")).toMatchObject({ provisional: "true" });
    await api.ledger.ledger.pool.query("DELETE FROM request_holds WHERE request_id = 'st-oct-export-stream'");
    expect(await exportOf("2026-10")).toMatchObject({ provisional: "false" });
  });

  it("given a usage started in a closed month recorded in the log but not yet folded by the projections, then the month stays provisional until it is charged", async () => {
    const settling = {
      requestId: "st-oct-unfolded",
      account: { kind: "user", id: "statement-unfolded" } as const,
      keyId: keyA,
      model: "alpha-5.4",
      // 2026-10-31 23:50 KST: a stream that ran past October's grace, its hold row logged just now.
      startedAt: "2026-10-31T14:50:00.000Z",
      tokens: tokens(1_000, 100),
    };
    const path = `/statements/user/${settling.account.id}?month=2026-10`;
    const exportIsProvisional = async () => {
      const response = await api.admin("HEAD", "/exports/charges?month=2026-10");
      return response.headers.get("x-export-provisional");
    };
    expect((await statementOf(path)).provisional).toBe(false);
    const locker = await api.ledger.ledger.pool.connect();
    try {
      await locker.query("BEGIN");
      // The projections' next batch waits behind this lock (readers do not): the usage is in the log only.
      await locker.query("LOCK TABLE projection_pending_charges IN EXCLUSIVE MODE");
      await api.ledger.append(usageAt(settling));
      await api.ledger.visible();
      expect((await statementOf(path)).provisional).toBe(true);
      expect(await exportIsProvisional()).toBe("true");
    } finally {
      await locker.query("ROLLBACK");
      locker.release();
    }
    await chargeRecordedUsage(api, settling.requestId);
    const [, charge] = await api.ledger.store.readStream(`usage-${settling.requestId}`);
    await api.waiter.waitFor(
      charge!.position,
      [monthlyStatementsProjection.name, balancesProjection.name],
      10_000,
    );
    expect(await statementOf(path)).toMatchObject({ provisional: false, chargeCount: 1 });
    expect(await exportIsProvisional()).toBe("false");
  });

  it("keeps a month provisional past its grace while the sweep keeps money back for a request started in it, final once that ends", async () => {
    const userId = "statement-swept-streamer";
    const path = `/statements/user/${userId}?month=2026-10`;
    await api.ledger.append(
      topUpAt({ kind: "user", id: userId }, "100", "swept streamer", "2026-10-02T00:00:00.000Z"),
    );
    await api.ledger.visible();
    expect((await statementOf(path)).provisional).toBe(false);
    // An October request's hold, swept while its gateway lived on: its correction may still change October.
    await api.ledger.ledger.pool.query(
      `INSERT INTO swept_hold_reserves (request_id, account_kind, account_id, key_id, month, gateway_instance,
                                        reserved_won, reserved_until)
       VALUES ('st-oct-swept', 'user', $1, $2, '2026-10', 'gateway-paused', 7.5, now() + interval '10 minutes')`,
      [userId, keyA],
    );
    expect((await statementOf(path)).provisional).toBe(true);
    // A reserve ended (its gateway's correction came, or its session ended, or its time passed)
    await api.ledger.ledger.pool.query("DELETE FROM swept_hold_reserves WHERE request_id = 'st-oct-swept'");
    expect((await statementOf(path)).provisional).toBe(false);
  });
});
