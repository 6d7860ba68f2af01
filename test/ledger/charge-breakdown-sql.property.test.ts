import Decimal from "decimal.js";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chargeBreakdownsInDatabase } from "../../src/billing/charging/charge-breakdowns-in-database";
import {
  type ChargeBreakdown,
  type ChargeInput,
  calculateCharge,
} from "../../src/billing/charging/charge-calculation";
import { migrate } from "../../src/database/migrations";
import { chargeLimits } from "../../src/kernel/limits";
import { parseMoney } from "../../src/kernel/money";
import { ledgerSchema } from "../../src/ledger/schema/ledger-schema";
import { createTestDatabase, type TestDatabase } from "../support/database";

/**
 * `ledger_charge_breakdown` (src/ledger/schema/charging/ledger-charge-breakdown.ts) against `calculateCharge`:
 * every field of the breakdown equal, money as text, over thousands of inputs priced a batch per statement.
 */

/** One request's pricing inputs as they travel to the database: counts as numbers, money as decimal text. */
interface PricingCase {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  inputUsdPerMillionTokens: string;
  cachedInputUsdPerMillionTokens: string;
  outputUsdPerMillionTokens: string;
  fxRateKrwPerUsd: string;
  fxRateDate: string;
  discountRate: string;
}

function chargeInputOf(pricing: PricingCase): ChargeInput {
  return {
    tokens: {
      inputTokens: pricing.inputTokens,
      cachedInputTokens: pricing.cachedInputTokens,
      outputTokens: pricing.outputTokens,
      reasoningTokens: pricing.reasoningTokens,
    },
    unitPrices: {
      inputUsdPerMillionTokens: parseMoney(pricing.inputUsdPerMillionTokens),
      cachedInputUsdPerMillionTokens: parseMoney(pricing.cachedInputUsdPerMillionTokens),
      outputUsdPerMillionTokens: parseMoney(pricing.outputUsdPerMillionTokens),
    },
    fxRate: { rateKrwPerUsd: parseMoney(pricing.fxRateKrwPerUsd), rateDate: pricing.fxRateDate },
    discountRate: parseMoney(pricing.discountRate),
  };
}

const pricingStatement = `
  SELECT ledger_charge_breakdown(
           priced.input_tokens, priced.cached_input_tokens, priced.output_tokens, priced.reasoning_tokens,
           priced.input_usd_per_million_tokens, priced.cached_input_usd_per_million_tokens,
           priced.output_usd_per_million_tokens, priced.fx_rate_krw_per_usd, priced.fx_rate_date,
           priced.discount_rate) AS breakdown
  FROM json_to_recordset($1::json) AS priced(
         ordinal int, input_tokens bigint, cached_input_tokens bigint, output_tokens bigint, reasoning_tokens bigint,
         input_usd_per_million_tokens numeric, cached_input_usd_per_million_tokens numeric,
         output_usd_per_million_tokens numeric, fx_rate_krw_per_usd numeric, fx_rate_date date,
         discount_rate numeric)
  ORDER BY priced.ordinal`;

const pricingColumnsOf = (pricing: PricingCase, ordinal: number) => ({
  ordinal,
  input_tokens: pricing.inputTokens,
  cached_input_tokens: pricing.cachedInputTokens,
  output_tokens: pricing.outputTokens,
  reasoning_tokens: pricing.reasoningTokens,
  // Text, so that NUMERIC keeps the scale as written ("1.50" has two places): trailing zeros reach the function.
  input_usd_per_million_tokens: pricing.inputUsdPerMillionTokens,
  cached_input_usd_per_million_tokens: pricing.cachedInputUsdPerMillionTokens,
  output_usd_per_million_tokens: pricing.outputUsdPerMillionTokens,
  fx_rate_krw_per_usd: pricing.fxRateKrwPerUsd,
  fx_rate_date: pricing.fxRateDate,
  discount_rate: pricing.discountRate,
});

let database: TestDatabase;
let pool: pg.Pool;

async function priceInSql(pricings: readonly PricingCase[]): Promise<ChargeBreakdown[]> {
  const result = await pool.query<{ breakdown: ChargeBreakdown }>(pricingStatement, [
    JSON.stringify(pricings.map(pricingColumnsOf)),
  ]);
  expect(result.rows).toHaveLength(pricings.length);
  return result.rows.map((row) => row.breakdown);
}

/** Every breakdown the database computed equals the TypeScript's, field by field; names the first that differs. */
async function expectSqlToMatchTypeScript(pricings: readonly PricingCase[]): Promise<void> {
  const fromSql = await priceInSql(pricings);
  pricings.forEach((pricing, index) => {
    expect({ pricing, breakdown: fromSql[index] }).toStrictEqual({
      pricing,
      breakdown: calculateCharge(chargeInputOf(pricing)),
    });
  });
}

const tokensMax = chargeLimits.tokensPerRequestMax;
const decimalPlacesMax = chargeLimits.decimalPlacesMax;

/** A decimal string of `units` scaled by 10^-places, optionally written with trailing zeros. */
function decimalText(units: bigint, places: number, trailingZeros = 0): string {
  const digits = units.toString().padStart(places + 1, "0");
  const written = places === 0 ? digits : `${digits.slice(0, -places)}.${digits.slice(-places)}`;
  if (trailingZeros === 0) return written;
  return `${written}${places === 0 ? "." : ""}${"0".repeat(trailingZeros)}`;
}

/** A decimal in [0, below) (or [0, below] when inclusive) with up to 10 significant places. */
function decimalArbitrary(below: bigint, options: { inclusive?: boolean; positive?: boolean } = {}) {
  return fc
    .record({
      places: fc.integer({ min: 0, max: decimalPlacesMax }),
      trailingZeros: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 6 })),
    })
    .chain(({ places, trailingZeros }) => {
      const scale = 10n ** BigInt(places);
      const unitsMax = below * scale - (options.inclusive === true ? 0n : 1n);
      const unitsMin = options.positive === true ? 1n : 0n;
      const units = fc.oneof(
        fc.bigInt({ min: unitsMin, max: unitsMax }),
        fc.constantFrom(unitsMin, unitsMax),
        fc.bigInt({ min: unitsMin, max: unitsMin + 1_000n < unitsMax ? unitsMin + 1_000n : unitsMax }),
      );
      return units.map((value) => decimalText(value, places, trailingZeros));
    });
}

const countArbitrary = (max: number) =>
  fc.oneof(
    fc.constantFrom(0, max),
    fc.integer({ min: 0, max: Math.min(max, 100_000) }),
    fc.bigInt({ min: 0n, max: BigInt(max) }).map(Number),
  );

/** Counts within the limits, with cached input at 0, equal to input or between, and reasoning up to output. */
const tokensArbitrary = countArbitrary(tokensMax).chain((inputTokens) =>
  fc
    .record({
      cachedInputTokens: fc.oneof(fc.constantFrom(0, inputTokens), countArbitrary(inputTokens)),
      outputTokens: countArbitrary(tokensMax),
    })
    .chain(({ cachedInputTokens, outputTokens }) =>
      fc.oneof(fc.constantFrom(0, outputTokens), countArbitrary(outputTokens)).map((reasoningTokens) => ({
        inputTokens,
        cachedInputTokens,
        outputTokens,
        reasoningTokens,
      })),
    ),
);

const priceArbitrary = decimalArbitrary(BigInt(chargeLimits.unitPriceUsdPerMillionTokensBelow));

const pricingArbitrary: fc.Arbitrary<PricingCase> = fc
  .record({
    tokens: tokensArbitrary,
    inputUsdPerMillionTokens: priceArbitrary,
    cachedInputUsdPerMillionTokens: priceArbitrary,
    outputUsdPerMillionTokens: priceArbitrary,
    fxRateKrwPerUsd: decimalArbitrary(BigInt(chargeLimits.fxRateKrwPerUsdBelow), { positive: true }),
    fxRateDate: fc.constantFrom("2026-03-03", "2026-12-31", "2027-01-01"),
    discountRate: fc.oneof(
      fc.constantFrom("0", "1", "0.5", "0.15"),
      decimalArbitrary(1n, { inclusive: true }),
    ),
  })
  .map(({ tokens, ...terms }) => ({ ...tokens, ...terms }));

const oddBelow = (below: bigint) =>
  fc.bigInt({ min: 0n, max: below / 2n - 1n }).map((half) => half * 2n + 1n);

/** Only output tokens, at one price: the simplest shape in which the amount is placed exactly. */
function outputOnly(
  outputTokens: number,
  outputUsdPerMillionTokens: string,
  fxRateKrwPerUsd: string,
  discountRate: string,
): PricingCase {
  return {
    inputTokens: 0,
    cachedInputTokens: 0,
    outputTokens,
    reasoningTokens: 0,
    inputUsdPerMillionTokens: "0",
    cachedInputUsdPerMillionTokens: "0",
    outputUsdPerMillionTokens,
    fxRateKrwPerUsd,
    fxRateDate: "2026-03-03",
    discountRate,
  };
}

/**
 * Amounts that are exactly half a micro-won before rounding, where half-up, half-even and truncation differ:
 * - an odd count of micro-USD times an odd rate, halved by a discount of 0.5;
 * - a price whose seventh place is 5, times an odd rate;
 * - an odd count of tokens (up to the maximum) at 0.5 USD per million, at a rate of 1.
 */
const halfMicroWonArbitrary: fc.Arbitrary<PricingCase> = fc.oneof(
  fc
    .record({ priceMicroUsd: oddBelow(10n ** 12n), rate: oddBelow(10n ** 6n) })
    .map(({ priceMicroUsd, rate }) =>
      outputOnly(1_000_000, decimalText(priceMicroUsd, 6), String(rate), "0.5"),
    ),
  fc
    .record({ priceTenthMicroUsd: fc.bigInt({ min: 0n, max: 10n ** 12n - 1n }), rate: oddBelow(10n ** 6n) })
    .map(({ priceTenthMicroUsd, rate }) =>
      outputOnly(1_000_000, decimalText(priceTenthMicroUsd * 10n + 5n, 7), String(rate), "0"),
    ),
  oddBelow(BigInt(tokensMax)).map((tokens) => outputOnly(Number(tokens), "0.5", "1", "0")),
);

/** The exact won before rounding, at 1000 digits: independent of both implementations. */
const WideDecimal = Decimal.clone({ precision: 1000, rounding: Decimal.ROUND_HALF_UP });
function exactWonOf(pricing: PricingCase): Decimal {
  const wide = (value: string | number) => new WideDecimal(value);
  return wide(pricing.inputTokens - pricing.cachedInputTokens)
    .times(wide(pricing.inputUsdPerMillionTokens))
    .plus(wide(pricing.cachedInputTokens).times(wide(pricing.cachedInputUsdPerMillionTokens)))
    .plus(wide(pricing.outputTokens).times(wide(pricing.outputUsdPerMillionTokens)))
    .dividedBy(1_000_000)
    .times(wide(pricing.fxRateKrwPerUsd))
    .times(wide(1).minus(wide(pricing.discountRate)));
}

const maxPrice = "999999.9999999999";
const tiniest = "0.0000000001";
const edgePricings: PricingCase[] = [
  // Every count and price at its largest acceptable value.
  {
    inputTokens: tokensMax,
    cachedInputTokens: 1,
    outputTokens: tokensMax,
    reasoningTokens: tokensMax - 1,
    inputUsdPerMillionTokens: maxPrice,
    cachedInputUsdPerMillionTokens: tiniest,
    outputUsdPerMillionTokens: maxPrice,
    fxRateKrwPerUsd: maxPrice,
    fxRateDate: "2026-03-03",
    discountRate: tiniest,
  },
  // Nothing at all: "0" and "0.000000".
  {
    inputTokens: 0,
    cachedInputTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
    inputUsdPerMillionTokens: "0.000",
    cachedInputUsdPerMillionTokens: "0",
    outputUsdPerMillionTokens: "15",
    fxRateKrwPerUsd: "1483.40",
    fxRateDate: "2026-03-03",
    discountRate: "0",
  },
  // Every input token cached, discount 1: a free request that still records its usd.
  {
    inputTokens: 123_456,
    cachedInputTokens: 123_456,
    outputTokens: 7,
    reasoningTokens: 7,
    inputUsdPerMillionTokens: "2.5",
    cachedInputUsdPerMillionTokens: "1.25",
    outputUsdPerMillionTokens: "10.00",
    fxRateKrwPerUsd: "1399.9999999999",
    fxRateDate: "2026-12-31",
    discountRate: "1.0000",
  },
  // The smallest price of one token: usd at the 16th place, far below a micro-won.
  {
    inputTokens: 1,
    cachedInputTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
    inputUsdPerMillionTokens: tiniest,
    cachedInputUsdPerMillionTokens: tiniest,
    outputUsdPerMillionTokens: tiniest,
    fxRateKrwPerUsd: tiniest,
    fxRateDate: "2026-03-03",
    discountRate: "0.9999999999",
  },
  // Exactly 0.0000005 won: rounds up to one micro-won.
  {
    inputTokens: 1,
    cachedInputTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
    inputUsdPerMillionTokens: "0.5",
    cachedInputUsdPerMillionTokens: "0",
    outputUsdPerMillionTokens: "0",
    fxRateKrwPerUsd: "1",
    fxRateDate: "2026-03-03",
    discountRate: "0",
  },
];

beforeAll(async () => {
  database = await createTestDatabase("charge_breakdown_sql");
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  await migrate(pool, ledgerSchema.objects);
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

describe("ledger_charge_breakdown prices exactly as calculateCharge", () => {
  it("given the edge cases (maxima, zero, all cached, discount 0 and 1, the tiniest price), then every field is equal", async () => {
    await expectSqlToMatchTypeScript(edgePricings);
  });

  it("given amounts of exactly half a micro-won, then both round them up, once", async () => {
    const ties = fc.sample(halfMicroWonArbitrary, { numRuns: 1_000, seed: 7 });
    // The generator's premise: each exact amount ends in a 5 at the seventh place and nothing after.
    for (const pricing of ties) {
      expect(exactWonOf(pricing).times(10_000_000).mod(10).toString(), JSON.stringify(pricing)).toBe("5");
    }
    await expectSqlToMatchTypeScript(ties);
    const fromSql = await priceInSql(ties);
    ties.forEach((pricing, index) => {
      const roundedUp = exactWonOf(pricing).toDecimalPlaces(6, Decimal.ROUND_UP).toFixed(6);
      expect(fromSql[index]?.amountWon).toBe(roundedUp);
    });
  });

  // Fixed seed: the same inputs every run; a failure names the input that differs.
  const randomPricings = () => fc.sample(pricingArbitrary, { numRuns: 5_000, seed: 20_261_128 });

  it("given 5,000 random acceptable inputs, priced 1,000 per statement, then every field is equal", async () => {
    const pricings = randomPricings();
    for (let start = 0; start < pricings.length; start += 1_000) {
      await expectSqlToMatchTypeScript(pricings.slice(start, start + 1_000));
    }
  });

  it("given the reconciler's statement (chargeBreakdownsInDatabase) over more than one chunk, then it answers calculateCharge's breakdowns in order", async () => {
    const inputs = randomPricings().slice(0, 1_200).map(chargeInputOf);
    // when
    const breakdowns = await chargeBreakdownsInDatabase(pool, inputs);
    // then
    expect(breakdowns).toStrictEqual(inputs.map(calculateCharge));
  });

  it("given inputs calculateCharge refuses, then the function refuses them too", async () => {
    const [valid] = edgePricings.slice(1) as [PricingCase];
    const refused: Partial<PricingCase>[] = [
      { cachedInputTokens: 1, inputTokens: 0 },
      { reasoningTokens: 1, outputTokens: 0 },
      { inputTokens: tokensMax + 1 },
      { inputUsdPerMillionTokens: "1000000" },
      { outputUsdPerMillionTokens: "0.00000000001" },
      { cachedInputUsdPerMillionTokens: "-0.1" },
      { fxRateKrwPerUsd: "0" },
      { discountRate: "1.0000000001" },
    ];
    for (const change of refused) {
      const pricing = { ...valid, ...change };
      expect(() => calculateCharge(chargeInputOf(pricing)), JSON.stringify(change)).toThrow(RangeError);
      await expect(priceInSql([pricing]), JSON.stringify(change)).rejects.toMatchObject({ code: "22003" });
    }
  });
});
