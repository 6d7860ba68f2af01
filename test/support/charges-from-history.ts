import Decimal from "decimal.js";

/**
 * What finance does with a month's export: for each charge line, find in the admin's history endpoints
 * (`GET /admin/prices/history`, `/admin/discounts/history`, `/admin/fx-rates`) the price, discount and FX
 * rate in force at the line's `started_at`, by the rule docs/billing.md ("Recomputing a month") writes, and
 * recompute the amount with decimal.js. Nothing here reads the service's code: only its documented outputs.
 */

/** Its own decimal.js: exact far beyond any charge, half-up as the rule says, never an exponent. */
const Exact = Decimal.clone({
  precision: 80,
  rounding: Decimal.ROUND_HALF_UP,
  toExpNeg: -100,
  toExpPos: 100,
});

export interface PriceChange {
  model: string;
  inputUsdPer1M: string;
  cachedInputUsdPer1M: string;
  outputUsdPer1M: string;
  effectiveAt: string;
}
export interface DiscountChange {
  model: string | null;
  organizationId: string | null;
  rate: string | null;
  effectiveAt: string;
}
export interface FxRate {
  appliesOn: string;
  rateDate: string;
  rate: string;
  recordedAt: string;
}
/** Each list newest first, as the endpoints answer it (ties in the ledger's order). */
export interface PricingHistory {
  prices: PriceChange[];
  discounts: DiscountChange[];
  fxRates: FxRate[];
}

export async function readPricingHistory(
  adminGet: (path: string) => Promise<Response>,
): Promise<PricingHistory> {
  // Every page, each read with the nextCursor of the page before, as the docs say.
  const data = async <Row>(path: string): Promise<Row[]> => {
    const rows: Row[] = [];
    let cursor: string | null = null;
    for (let pagesRead = 0; pagesRead < 1_000; pagesRead += 1) {
      const pagePath: string = cursor === null ? path : `${path}&cursor=${encodeURIComponent(cursor)}`;
      const response = await adminGet(pagePath);
      if (response.status !== 200)
        throw new Error(`${pagePath}: ${response.status} ${await response.text()}`);
      const page = (await response.json()) as { data: Row[]; nextCursor: string | null };
      rows.push(...page.data);
      if (page.nextCursor === null) return rows;
      cursor = page.nextCursor;
    }
    throw new Error(`${path}: more than 1,000 pages`);
  };
  return {
    prices: await data<PriceChange>("/prices/history?limit=1000"),
    discounts: await data<DiscountChange>("/discounts/history?limit=1000"),
    fxRates: await data<FxRate>("/fx-rates?limit=10000"),
  };
}

/** A charge line as the billing CSV and the finance export write it (column names as in the header). */
export type ChargeLine = Record<string, string>;

export interface TermsInForce {
  inputUsdPer1M: string;
  cachedInputUsdPer1M: string;
  outputUsdPer1M: string;
  fxRate: string;
  fxRateDate: string;
  discountRate: string;
}

const seoulOffsetMs = 9 * 3_600_000;
const seoulDateOf = (instant: string) =>
  new Date(new Date(instant).getTime() + seoulOffsetMs).toISOString().slice(0, 10);
const atOrBefore = (instant: string, start: string) => new Date(instant) <= new Date(start);

/** The terms the line's request was priced with, found in the histories alone. */
export function termsInForce(line: ChargeLine, history: PricingHistory): TermsInForce {
  const start = line.started_at!;
  const model = line.model!;
  const price = history.prices.find(
    (change) => change.model === model && atOrBefore(change.effectiveAt, start),
  );
  if (!price) throw new Error(`${line.request_id}: no price of ${model} in force at ${start}`);
  // The rate of the request's Seoul date D: of the rates recorded by its start, the latest day up to D.
  const day = seoulDateOf(start);
  const fx = history.fxRates.find((rate) => rate.appliesOn <= day && atOrBefore(rate.recordedAt, start));
  if (!fx) throw new Error(`${line.request_id}: no FX rate in force at ${start}`);
  return {
    inputUsdPer1M: price.inputUsdPer1M,
    cachedInputUsdPer1M: price.cachedInputUsdPer1M,
    outputUsdPer1M: price.outputUsdPer1M,
    fxRate: fx.rate,
    fxRateDate: fx.rateDate,
    discountRate: discountInForce(line, history.discounts),
  };
}

/** The most specific scope whose latest change by the start is a rule: (model, org), (any, org), (model, any), (any, any). */
function discountInForce(line: ChargeLine, discounts: readonly DiscountChange[]): string {
  const start = line.started_at!;
  const organization = line.account_kind === "organization" ? line.account_id! : null;
  const scopes: [string | null, string | null][] = [
    [line.model!, organization],
    [null, organization],
    [line.model!, null],
    [null, null],
  ];
  for (const [model, organizationId] of scopes) {
    // A personal key has no organization: only the scopes of any organization apply to it.
    if (organization === null && organizationId !== null) continue;
    const latest = discounts.find(
      (change) =>
        change.model === model &&
        change.organizationId === organizationId &&
        atOrBefore(change.effectiveAt, start),
    );
    if (latest && latest.rate !== null) return latest.rate;
  }
  return "0";
}

/**
 * usd = ((input − cached) × input price + cached × cached price + output × output price) / 1,000,000;
 * won = usd × rate × (1 − discount), rounded once, half-up, to six places. A count left blank (not
 * reported) is priced as 0. Both in the API's one money form.
 */
export function recomputedAmounts(line: ChargeLine, terms: TermsInForce): { usd: string; won: string } {
  const count = (text: string | undefined) => new Exact(text === undefined || text === "" ? 0 : text);
  const cached = count(line.cached_input_tokens);
  const usd = count(line.input_tokens)
    .minus(cached)
    .times(terms.inputUsdPer1M)
    .plus(cached.times(terms.cachedInputUsdPer1M))
    .plus(count(line.output_tokens).times(terms.outputUsdPer1M))
    .dividedBy(1_000_000);
  const won = usd
    .times(terms.fxRate)
    .times(new Exact(1).minus(terms.discountRate))
    .toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
  return { usd: oneForm(usd), won: oneForm(won) };
}

/** docs/api.md, "Money": plain, no trailing zeros, one zero. */
function oneForm(value: Decimal): string {
  return value.isZero() ? "0" : value.toFixed();
}

/** A CSV's rows, as RFC 4180 writes them: quoted fields, doubled quotes, CRLF after every row. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!;
    if (quoted) {
      if (character === '"' && text[index + 1] === '"') {
        field += '"';
        index++;
      } else if (character === '"') quoted = false;
      else field += character;
    } else if (character === '"') quoted = true;
    else if (character === ",") {
      row.push(field);
      field = "";
    } else if (character === "\r" && text[index + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      index++;
    } else field += character;
  }
  return rows;
}

/** A CSV of the billing history's shape, parsed: each record by its header's names. */
export function parseCsvRecords(text: string): ChargeLine[] {
  const rows = parseCsv(text);
  const [header, ...records] = rows;
  if (!header) throw new Error("an empty CSV");
  return records.map((record) =>
    Object.fromEntries(header.map((name, index) => [name, record[index] ?? ""])),
  );
}

/** Sums decimal strings exactly, in the API's one money form. */
export function sumOf(amounts: readonly string[]): string {
  return oneForm(amounts.reduce((total, amount) => total.plus(amount), new Exact(0)));
}
