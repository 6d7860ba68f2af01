import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path, { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import { LedgerSigningKey } from "../../src/ledger/integrity/ledger-signing-key";
import { installModels } from "../../src/providers/catalog";
import { loadModelsFile } from "../../src/providers/models-file";
import type { ModelFamily } from "../../src/providers/provider";
import { startSimulator } from "../../src/providers/simulator/simulator";
import {
  parseCsvRecords,
  readPricingHistory,
  recomputedAmounts,
  sumOf,
  termsInForce,
} from "../support/charges-from-history";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * Finance's check, through the real gateway and workers: charges over models, the four discount levels of
 * C7, cached input (a messages upstream reporting cache reads and writes), an FX rate corrected mid-day, a
 * discount and prices changed between two rounds of requests, charges of exactly half a micro-won, and a
 * request a fallback answered; then every charge of `GET /admin/billing` (JSON and CSV) is recomputed from
 * its breakdown with decimals written here from C7's text alone (BigInt units, half-up once to six places),
 * every line of the month's finance export is recomputed from the price, discount and FX histories alone
 * (test/support/charges-from-history.ts), and the month's statement, the balance and each receipt must say
 * the same amounts.
 */

// ---- exact decimals: an integer of units and a scale, nothing else ----
interface Exact {
  units: bigint;
  scale: number;
}
function exact(text: string): Exact {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new Error(`not a decimal: ${text}`);
  const units = BigInt(match[2]! + (match[3] ?? ""));
  return { units: match[1] ? -units : units, scale: (match[3] ?? "").length };
}
const whole = (count: number): Exact => ({ units: BigInt(count), scale: 0 });
const times = (left: Exact, right: Exact): Exact => ({
  units: left.units * right.units,
  scale: left.scale + right.scale,
});
function plus(left: Exact, right: Exact): Exact {
  const scale = Math.max(left.scale, right.scale);
  const at = (value: Exact) => value.units * 10n ** BigInt(scale - value.scale);
  return { units: at(left) + at(right), scale };
}
const minus = (left: Exact, right: Exact): Exact => plus(left, { units: -right.units, scale: right.scale });
const same = (left: Exact, right: Exact) => minus(left, right).units === 0n;
/** C7: half-up (a half rounds away from zero; charges are never negative) to micro-won. */
function halfUpToMicroWon(value: Exact): Exact {
  if (value.scale <= 6) return { units: value.units * 10n ** BigInt(6 - value.scale), scale: 6 };
  const divisor = 10n ** BigInt(value.scale - 6);
  const magnitude = value.units < 0n ? -value.units : value.units;
  const rounded = magnitude / divisor + ((magnitude % divisor) * 2n >= divisor ? 1n : 0n);
  return { units: value.units < 0n ? -rounded : rounded, scale: 6 };
}

interface Breakdown {
  tokens: { input: number; cached: number | null; output: number; reasoning: number | null };
  inputUsdPerMillionTokens: string;
  cachedInputUsdPerMillionTokens: string;
  outputUsdPerMillionTokens: string;
  usd: string;
  fxRateKrwPerUsd: string;
  fxRateDate: string;
  discountRate: string;
  amountWon: string;
}
interface Charge {
  requestId: string;
  amountWon: string;
  breakdown: Breakdown;
}

/** usd = ((input − cached) × inputPrice + cached × cachedPrice + output × outputPrice) / 1,000,000; won = usd × fx × (1 − discount). */
function recomputed(breakdown: Breakdown): { usd: Exact; won: Exact } {
  const cached = breakdown.tokens.cached ?? 0;
  const usdTimesMillion = plus(
    plus(
      times(whole(breakdown.tokens.input - cached), exact(breakdown.inputUsdPerMillionTokens)),
      times(whole(cached), exact(breakdown.cachedInputUsdPerMillionTokens)),
    ),
    times(whole(breakdown.tokens.output), exact(breakdown.outputUsdPerMillionTokens)),
  );
  const usd = { units: usdTimesMillion.units, scale: usdTimesMillion.scale + 6 };
  const discount = minus(whole(1), exact(breakdown.discountRate));
  return { usd, won: halfUpToMicroWon(times(times(usd, exact(breakdown.fxRateKrwPerUsd)), discount)) };
}

// ---- the gateway ----
const signingKey = LedgerSigningKey.parse(Buffer.alloc(32, 41).toString("base64"));
/** A messages upstream reporting 1,234 uncached, 567 cache-written and 98,765 cache-read input tokens. */
const cachedUsage = {
  input_tokens: 1_234,
  cache_creation_input_tokens: 567,
  cache_read_input_tokens: 98_765,
  output_tokens: 4_321,
};
/**
 * What the same upstream reports for delta-4.6-opus: 120 input tokens, 100 of them cached, and 1 output
 * token, which its prices and the day's rates below make exactly half a micro-won (see `halfMicroWon`).
 */
const halfUsage = {
  input_tokens: 20,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 100,
  output_tokens: 1,
};
const rateBefore = "1483.47";
const rateAfter = "1500.015";
/**
 * delta-4.6-opus at $5 (cached $0.5, output $0) in the first round: (20 × 5 + 100 × 0.5) / 10⁶ × 1483.47 =
 * ₩0.2225205; at $10 (cached $1) in the second: 0.0003 × 1500.015 = ₩0.4500045. Half-up gives the six
 * places below; half-even or truncation would end in 0 and 4.
 */
const halfMicroWon = { [rateBefore]: "0.222521", [rateAfter]: "0.450005" } as const;
let harness: GatewayHarness;
let messagesUpstream: Server;
let zetaUpstream: FaultyUpstream;
let modelsDirectory: string;
let closeSimulator: () => Promise<void>;

type Round = typeof rateBefore | typeof rateAfter;
interface Sent {
  requestId: string;
  key: string;
  account: Account;
  /** The model asked for. */
  model: string;
  /** The model charged: a fallback's when one answered. */
  chargedModel: string;
  discountRate: string;
  fxRate: Round;
}
const sent: Sent[] = [];
const accounts = [
  "user:finance-user",
  "organization:finance-org-1",
  "organization:finance-org-2",
  "organization:finance-org-half",
] as const;
type Account = (typeof accounts)[number];

function admin(method: string, route: string, body?: unknown): Promise<Response> {
  return fetch(`${harness.url}/admin${route}`, {
    method,
    headers: {
      authorization: `Bearer ${testSecrets.adminToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function expectStatus(response: Promise<Response>, status: number): Promise<void> {
  const answered = await response;
  expect(answered.status, await answered.text()).toBe(status);
}

const seoulToday = () => new Intl.DateTimeFormat("en-CA", { timeZone: "Asia/Seoul" }).format(new Date());

beforeAll(async () => {
  messagesUpstream = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const { model } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          id: "msg_finance",
          type: "message",
          role: "assistant",
          model,
          content: [{ type: "text", text: "Cached." }],
          stop_reason: "end_turn",
          stop_sequence: null,
          usage: model === "delta-4.6-opus" ? halfUsage : cachedUsage,
        }),
      );
    });
  }).listen(0, "127.0.0.1");
  await new Promise((resolve) => messagesUpstream.once("listening", resolve));
  const simulator = await startSimulator({});
  closeSimulator = () => simulator.close();
  // zeta-mini's upstream fails every attempt; its fallback delta-4.6-sonnet answers (as a models file says).
  zetaUpstream = await startFaultyUpstream(simulator.url);
  zetaUpstream.setPlan(() => ({ kind: "status", status: 503 }));
  modelsDirectory = await mkdtemp(join(tmpdir(), "finance-recomputation-"));
  const modelsFile = join(modelsDirectory, "models.yaml");
  await writeFile(
    modelsFile,
    "models:\n  zeta-mini:\n    family: zeta\n    protocol: chat-completions\n    fallbacks: [delta-4.6-sonnet]\n",
  );
  installModels(await loadModelsFile(modelsFile, {}));
  const messagesUrl = `http://127.0.0.1:${(messagesUpstream.address() as AddressInfo).port}`;
  const baseUrlOf = (family: ModelFamily) =>
    family === "delta" ? messagesUrl : family === "zeta" ? zetaUpstream.url : simulator.url;
  const upstreams = Object.fromEntries(
    modelFamilies.map((family) => [family, { baseUrl: baseUrlOf(family), apiKey: "upstream" }]),
  ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
  harness = await startGatewayHarness({
    label: "finance_recomputation",
    billing: {},
    service: { adminToken: testSecrets.adminToken, ledgerSigningKey: signingKey, upstreams },
  });

  // Given: prices, a discount at each level, and today's (Seoul) rate
  const today = seoulToday();
  const prices = {
    "alpha-5.4": { inputUsdPer1M: "1.234567", cachedInputUsdPer1M: "0.123457", outputUsdPer1M: "9.876543" },
    "beta-3-flash": { inputUsdPer1M: "0.3", outputUsdPer1M: "2.5" },
    "delta-4.5-haiku": { inputUsdPer1M: "1.1", cachedInputUsdPer1M: "0.11", outputUsdPer1M: "5.5" },
    "delta-4.6-opus": { inputUsdPer1M: "5", cachedInputUsdPer1M: "0.5", outputUsdPer1M: "0" },
    "delta-4.6-sonnet": { inputUsdPer1M: "3.3", cachedInputUsdPer1M: "0.33", outputUsdPer1M: "16.5" },
    "zeta-mini": { inputUsdPer1M: "0.7", cachedInputUsdPer1M: "0.07", outputUsdPer1M: "2.8" },
  };
  for (const [slug, price] of Object.entries(prices))
    await expectStatus(admin("PUT", `/models/${slug}/price`, price), 200);
  for (const rule of [
    { model: "alpha-5.4", organizationId: null, rate: "0.1" },
    { model: null, organizationId: "finance-org-1", rate: "0.2" },
    { model: "alpha-5.4", organizationId: "finance-org-1", rate: "0.3" },
    { model: null, organizationId: null, rate: "0.05" },
    // The model asked for has a discount of its own; the fallback that answers does not.
    { model: "zeta-mini", organizationId: null, rate: "0.5" },
    // A rate of 0 exempts its scope from the broader rules.
    { model: null, organizationId: "finance-org-half", rate: "0" },
  ])
    await expectStatus(admin("PUT", "/discounts", rule), 200);
  await expectStatus(admin("POST", "/fx-rates", { appliesOn: today, rate: rateBefore }), 201);

  const keyOf = async (userId: string, organizationId?: string) =>
    (
      await harness.issueKey(await harness.session(userId, organizationId), {
        isOrganization: organizationId !== undefined,
      })
    ).key;
  const personal = await keyOf("finance-user");
  const organization1 = await keyOf("finance-member-1", "finance-org-1");
  const organization2 = await keyOf("finance-member-2", "finance-org-2");
  const organizationHalf = await keyOf("finance-member-half", "finance-org-half");
  for (const account of accounts) {
    const [kind, id] = account.split(":") as ["user" | "organization", string];
    await harness.topUp({ kind, id }, "100000");
  }
  // The most specific rule applies: (model, org) > (any, org) > (model, any) > (any, any). In the second
  // round finance-org-2 has a rule of its own, set between the rounds.
  const requestsOf = (round: Round) => [
    { key: personal, account: accounts[0], model: "alpha-5.4", discountRate: "0.1" },
    { key: personal, account: accounts[0], model: "beta-3-flash", discountRate: "0.05" },
    { key: personal, account: accounts[0], model: "delta-4.5-haiku", discountRate: "0.05" },
    // Answered by delta-4.6-sonnet: charged at its price and its discount (any, any), not zeta-mini's.
    {
      key: personal,
      account: accounts[0],
      model: "zeta-mini",
      chargedModel: "delta-4.6-sonnet",
      discountRate: "0.05",
    },
    { key: organization1, account: accounts[1], model: "alpha-5.4", discountRate: "0.3" },
    { key: organization1, account: accounts[1], model: "beta-3-flash", discountRate: "0.2" },
    { key: organization1, account: accounts[1], model: "delta-4.5-haiku", discountRate: "0.2" },
    {
      key: organization2,
      account: accounts[2],
      model: "alpha-5.4",
      discountRate: round === rateBefore ? "0.1" : "0.25",
    },
    {
      key: organization2,
      account: accounts[2],
      model: "beta-3-flash",
      discountRate: round === rateBefore ? "0.05" : "0.25",
    },
    { key: organizationHalf, account: accounts[3], model: "delta-4.6-opus", discountRate: "0" },
  ];
  // When: the requests are sent; the day's rate is corrected, a discount and two prices change; and they
  // are sent again
  for (const fxRate of [rateBefore, rateAfter] as const) {
    if (fxRate === rateAfter) {
      await expectStatus(admin("POST", "/fx-rates", { appliesOn: today, rate: rateAfter }), 201);
      await expectStatus(
        admin("PUT", "/discounts", { model: null, organizationId: "finance-org-2", rate: "0.25" }),
        200,
      );
      await expectStatus(
        admin("PUT", "/models/beta-3-flash/price", { inputUsdPer1M: "0.35", outputUsdPer1M: "2.75" }),
        200,
      );
      await expectStatus(
        admin("PUT", "/models/delta-4.6-opus/price", {
          inputUsdPer1M: "10",
          cachedInputUsdPer1M: "1",
          outputUsdPer1M: "0",
        }),
        200,
      );
    }
    for (const request of requestsOf(fxRate)) {
      const completion = await harness
        .openai(request.key)
        .chat.completions.create({
          model: request.model,
          messages: [{ role: "user", content: `what does ${request.model} cost at ${fxRate}?` }],
        })
        .withResponse();
      sent.push({
        chargedModel: request.model,
        ...request,
        fxRate,
        requestId: completion.response.headers.get("x-request-id")!,
      });
    }
  }
}, 120_000);

afterAll(async () => {
  await harness?.close();
  await closeSimulator?.();
  await zetaUpstream?.close();
  messagesUpstream?.close();
  if (modelsDirectory) await rm(modelsDirectory, { recursive: true, force: true });
});

/** The account's charges once the workers have charged all its requests. */
async function chargesOf(account: string): Promise<Charge[]> {
  const expected = sent.filter((request) => request.account === account).length;
  for (let attempt = 0; attempt < 300; attempt++) {
    const { data } = (await (await admin("GET", `/billing?account=${account}`)).json()) as { data: Charge[] };
    if (data.length === expected) return data;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${account}: not every request charged within 30 s`);
}

describe("finance recomputes every won from the billing export", () => {
  it("given charges over models, discounts, cached input, a mid-day FX correction and a fallback, then each breakdown recomputes to its amount", {
    timeout: 60_000,
  }, async () => {
    for (const account of accounts) {
      const charges = await chargesOf(account);
      const csv = parseCsvRecords(
        await (await admin("GET", `/billing?account=${account}&format=csv`)).text(),
      );
      expect(csv.map((row) => row.request_id)).toEqual(charges.map((charge) => charge.requestId));
      for (const charge of charges) {
        const request = sent.find((each) => each.requestId === charge.requestId)!;
        const { usd, won } = recomputed(charge.breakdown);
        expect(same(usd, exact(charge.breakdown.usd)), `${charge.requestId} usd`).toBe(true);
        expect(same(won, exact(charge.amountWon)), `${charge.requestId} won`).toBe(true);
        expect(charge.breakdown.discountRate, `${request.model} by ${account}`).toBe(request.discountRate);
        // Started before the correction: the rate then in force; after: the corrected one.
        expect(charge.breakdown.fxRateKrwPerUsd).toBe(request.fxRate);
        if (request.model === "delta-4.5-haiku")
          expect(charge.breakdown.tokens).toMatchObject({ input: 100_566, cached: 98_765, output: 4_321 });
        // Exactly half a micro-won: rounded up, once.
        if (request.model === "delta-4.6-opus") expect(charge.amountWon).toBe(halfMicroWon[request.fxRate]);
        const row = csv.find((each) => each.request_id === charge.requestId)!;
        // A fallback's answer is charged as the model that answered, and named so.
        expect(row.model, charge.requestId).toBe(request.chargedModel);
        expect([row.amount_won, row.usd, row.fx_rate_krw_per_usd, row.discount_rate]).toEqual([
          charge.amountWon,
          charge.breakdown.usd,
          charge.breakdown.fxRateKrwPerUsd,
          charge.breakdown.discountRate,
        ]);
      }
    }
  });

  it("then the month's statement sums its lines and the balance is the top-up less them", async () => {
    const month = new Intl.DateTimeFormat("en-CA", { timeZone: "Asia/Seoul" }).format(new Date()).slice(0, 7);
    for (const account of accounts) {
      const charges = await chargesOf(account);
      const total = charges.reduce((sum, charge) => plus(sum, exact(charge.amountWon)), whole(0));
      const [kind, id] = account.split(":");
      const statement = (await (
        await admin("GET", `/statements/${kind}/${id}?month=${month}&lines=charges`)
      ).json()) as { chargesWon: string; correctionsWon: string; charges: Charge[] };
      expect(same(exact(statement.chargesWon), total), account).toBe(true);
      expect(statement.correctionsWon).toBe("0");
      expect(statement.charges.map((line) => line.amountWon)).toEqual(
        charges.map((charge) => charge.amountWon),
      );
      const { balanceWon } = (await (await admin("GET", `/accounts/${kind}/${id}`)).json()) as {
        balanceWon: string;
      };
      expect(same(exact(balanceWon), minus(whole(100_000), total)), account).toBe(true);
    }
  });

  it("then every line of the month's finance export recomputes from the price, discount and FX histories alone, and sums to the statements", {
    timeout: 60_000,
  }, async () => {
    const month = seoulToday().slice(0, 7);
    for (const account of accounts) await chargesOf(account);
    const history = await readPricingHistory((route) => admin("GET", route));
    const exported = await admin("GET", `/exports/charges?month=${month}`);
    expect(exported.status).toBe(200);
    const lines = parseCsvRecords(await exported.text());
    expect(lines.map((line) => line.request_id).sort()).toEqual(
      sent.map((request) => request.requestId).sort(),
    );
    for (const line of lines) {
      const terms = termsInForce(line, history);
      // The terms the line says it was priced with are those the histories had in force at its start
      expect(
        [
          line.input_usd_per_million_tokens,
          line.cached_input_usd_per_million_tokens,
          line.output_usd_per_million_tokens,
          line.fx_rate_krw_per_usd,
          line.fx_rate_date,
          line.discount_rate,
        ],
        line.request_id,
      ).toEqual([
        terms.inputUsdPer1M,
        terms.cachedInputUsdPer1M,
        terms.outputUsdPer1M,
        terms.fxRate,
        terms.fxRateDate,
        terms.discountRate,
      ]);
      // and the rule recomputes its amount to the micro-won, in the same string
      expect([line.usd, line.amount_won], line.request_id).toEqual(
        Object.values(recomputedAmounts(line, terms)),
      );
    }
    for (const account of accounts) {
      const [kind, id] = account.split(":");
      const own = lines.filter((line) => `${line.account_kind}:${line.account_id}` === account);
      const statement = (await (
        await admin("GET", `/statements/${kind}/${id}?month=${month}&lines=charges`)
      ).json()) as {
        chargesWon: string;
        correctionsWon: string;
        chargesByModel: { model: string; requests: number; amountWon: string }[];
        charges: { requestId: string; amountWon: string }[];
      };
      // The export's lines are the statement's: the same requests at the same amounts, summing to its totals
      expect(
        statement.charges.map((line) => [line.requestId, line.amountWon]),
        account,
      ).toEqual(own.map((line) => [line.request_id, line.amount_won]));
      expect(sumOf(own.map((line) => line.amount_won!)), account).toBe(
        sumOf([statement.chargesWon, statement.correctionsWon]),
      );
      for (const group of statement.chargesByModel) {
        const ofModel = own.filter((line) => line.model === group.model);
        expect([group.requests, group.amountWon], `${account} ${group.model}`).toEqual([
          ofModel.length,
          sumOf(ofModel.map((line) => line.amount_won!)),
        ]);
      }
    }
  });

  it("then each receipt carries the charge's amount and the stand-alone verifier finds it valid", {
    timeout: 60_000,
  }, async () => {
    const { receiptFailures } = (await import(
      pathToFileURL(path.resolve("src/billing/receipts/verify-receipt.mjs")).href
    )) as { receiptFailures: (receipt: unknown, publicKeyPem: string) => string[] };
    const publicKeyPem = await (await fetch(`${harness.url}/ledger/public-key`)).text();
    const charges = (await Promise.all(accounts.map(chargesOf))).flat();
    for (const request of sent) {
      const receipt = await sealedReceipt(request);
      const charge = charges.find((each) => each.requestId === request.requestId)!;
      // The receipt keeps the event's six places; the export says the same amount in the API's one form.
      expect(same(exact(receipt.amountWon), exact(charge.amountWon))).toBe(true);
      expect(receiptFailures(receipt, publicKeyPem)).toEqual([]);
    }
  });
});

async function sealedReceipt(request: Sent): Promise<{ amountWon: string }> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const response = await fetch(`${harness.url}/llm/receipts/${request.requestId}`, {
      headers: { authorization: `Bearer ${request.key}` },
    });
    if (response.status === 200) {
      const receipt = (await response.json()) as {
        amountWon: string;
        charges: { seal: { status: string } }[];
      };
      if (receipt.charges.every((charge) => charge.seal.status === "sealed")) return receipt;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no sealed receipt for ${request.requestId} within 30 s`);
}
