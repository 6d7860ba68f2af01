import { describe, expect, it } from "vitest";
import type { BillingHistoryEntry, UsageDay } from "../../console/src/lib/api";
import { ApiFailure } from "../../console/src/lib/api";
import { niceTicks } from "../../console/src/lib/chart-ticks";
import { chargesCsv, chargesCsvHeader, chargesCsvRows, csvField } from "../../console/src/lib/csv";
import { errorTextOf } from "../../console/src/lib/error-text";
import {
  addDays,
  formatChargeWon,
  formatCount,
  formatDecimal,
  formatMicroWon,
  formatRate,
  formatSeoulDateTime,
  formatShortDate,
  formatWon,
  microWonOf,
  seoulDateOf,
  sumWon,
  wonOfMicroWon,
} from "../../console/src/lib/format";
import { fxSeries } from "../../console/src/lib/fx-series";
import { dictionaries, preferredLanguage } from "../../console/src/lib/i18n";
import { takeSseData } from "../../console/src/lib/sse";
import { usagePeriodOf, usageSeries } from "../../console/src/lib/usage-series";
import { billingCsvHeader } from "../../src/gateway/admin/billing-csv";

/** The console's money, date, CSV and language rules, which every page relies on. */

describe("won formatting (ko-KR everywhere)", () => {
  it("groups thousands and shows at most two decimals for balances", () => {
    expect(formatWon("10000")).toBe("₩10,000");
    expect(formatWon("1234567.5")).toBe("₩1,234,567.5");
    expect(formatWon("9999.873412")).toBe("₩9,999.87");
    expect(formatWon("-12.5")).toBe("-₩12.5");
    expect(formatWon("0")).toBe("₩0");
    expect(formatWon("-0.004")).toBe("₩0");
    expect(formatWon("-0.005")).toBe("-₩0.01");
  });

  it("rounds half-up on the exact decimal, never through a float", () => {
    // 0.125 and 1.005 are not exact in binary floating point; the string is.
    expect(formatWon("0.125")).toBe("₩0.13");
    expect(formatWon("1.005")).toBe("₩1.01");
    expect(formatWon("90071992547409931.99")).toBe("₩90,071,992,547,409,931.99");
  });

  it("shows micro-won with six decimals in breakdowns", () => {
    expect(formatMicroWon("0.08225")).toBe("₩0.082250");
    expect(formatMicroWon("1234.000001")).toBe("₩1,234.000001");
  });

  it("shows charges and their totals with one precision, a tiny charge as <₩0.01, never ₩0.00", () => {
    expect(formatChargeWon("79.59")).toBe("₩79.59");
    expect(formatChargeWon("0.7938")).toBe("₩0.79");
    expect(formatChargeWon("12")).toBe("₩12.00");
    expect(formatChargeWon("0.005")).toBe("₩0.01");
    expect(formatChargeWon("0.004999")).toBe("<₩0.01");
    expect(formatChargeWon("0")).toBe("₩0.00");
    expect(formatChargeWon("-0.000001")).toBe("-<₩0.01");
    expect(formatChargeWon("1234567.125")).toBe("₩1,234,567.13");
  });

  it("formats prices, rates and counts", () => {
    expect(formatDecimal("1483.40")).toBe("1,483.4");
    expect(formatDecimal("0.025")).toBe("0.025");
    expect(formatRate("0.15")).toBe("15%");
    expect(formatRate("0")).toBe("0%");
    expect(formatCount(1234567)).toBe("1,234,567");
    expect(formatCount(null)).toBe("—");
  });

  it("refuses what is not a decimal string", () => {
    expect(() => formatWon("1e3")).toThrow(RangeError);
    expect(() => formatWon("")).toThrow(RangeError);
    expect(() => microWonOf("0.0000001")).toThrow(RangeError);
  });
});

describe("exact sums in micro-won", () => {
  it("adds decimal strings exactly", () => {
    expect(sumWon(["0.1", "0.2"])).toBe("0.3");
    expect(sumWon(["0.082250", "0.090650", "-0.1"])).toBe("0.0729");
    expect(sumWon([])).toBe("0");
  });

  it("round-trips through micro-won", () => {
    for (const amount of ["0", "1", "-1.5", "123456789.123456", "0.000001", "-0.000001"]) {
      expect(wonOfMicroWon(microWonOf(amount))).toBe(amount);
    }
  });
});

describe("Seoul dates", () => {
  it("puts an instant on its Seoul calendar date", () => {
    expect(seoulDateOf(new Date("2026-11-23T14:59:59.999Z"))).toBe("2026-11-23");
    expect(seoulDateOf(new Date("2026-11-23T15:00:00.000Z"))).toBe("2026-11-24");
    expect(seoulDateOf(new Date("2026-12-31T15:00:00.000Z"))).toBe("2027-01-01");
  });

  it("does calendar arithmetic across months, years and leap days", () => {
    expect(addDays("2026-11-30", 1)).toBe("2026-12-01");
    expect(addDays("2026-12-31", 1)).toBe("2027-01-01");
    expect(addDays("2028-03-01", -1)).toBe("2028-02-29");
    expect(addDays("2026-11-23", -29)).toBe("2026-10-25");
  });

  it("shows instants in Seoul time in either language", () => {
    const instant = "2026-11-23T11:04:15.000Z";
    expect(formatSeoulDateTime(instant, "en")).toBe("Nov 23, 2026, 8:04:15 PM");
    // Node may carry less Korean locale data than a browser ("PM" for "오후"); the hour is what matters here.
    expect(formatSeoulDateTime(instant, "ko")).toMatch(/^2026\. 11\. 23\. (오후|PM) 8:04:15$/);
    expect(formatShortDate("2026-11-23", "en")).toBe("Nov 23");
    expect(formatShortDate("2026-11-23", "ko")).toMatch(/^(11월 23일|11\. 23\.|Nov 23|M11 23)$/);
  });
});

describe("error texts", () => {
  it("says an unreachable gateway and an ended session in the page's words, with no English of the browser's", () => {
    expect(errorTextOf(new TypeError("Failed to fetch"))).toEqual({
      sentence: "errorUnreachable",
      detail: null,
    });
    expect(errorTextOf(new TypeError("NetworkError when attempting to fetch resource."))).toEqual({
      sentence: "errorUnreachable",
      detail: null,
    });
    expect(errorTextOf(new ApiFailure(401, 1, "Unauthorized"))).toEqual({
      sentence: "sessionEnded",
      detail: null,
    });
    // On a sign-in form a 401 is the token refused, not a session ended.
    expect(errorTextOf(new ApiFailure(401, 1, "Unauthorized"), { unauthenticated: "invalidToken" })).toEqual({
      sentence: "invalidToken",
      detail: null,
    });
    expect(dictionaries.ko.errorUnreachable).toBe(
      "게이트웨이에 연결할 수 없습니다. 네트워크 연결을 확인하고 다시 시도하세요.",
    );
  });

  it("keeps the server's own message after a translated sentence, and translates no server text", () => {
    const refused = new ApiFailure(400, 100, "temperature: must be at most 2");
    expect(errorTextOf(refused)).toEqual({
      sentence: "errorRefused",
      detail: "temperature: must be at most 2",
    });
    expect(errorTextOf(new ApiFailure(403, 160, "owners and admins only")).sentence).toBe("errorForbidden");
    expect(errorTextOf(new ApiFailure(404, 40, "no such key")).sentence).toBe("errorNotFound");
    expect(errorTextOf(new ApiFailure(429, 30, "slow down")).sentence).toBe("errorTooManyRequests");
    expect(errorTextOf(new ApiFailure(502, undefined, "Bad Gateway"))).toEqual({
      sentence: "errorGatewayFailed",
      detail: "Bad Gateway",
    });
    expect(errorTextOf(new Error("stream cut"))).toEqual({ sentence: "error", detail: "stream cut" });
    for (const sentence of ["errorRefused", "errorForbidden", "errorGatewayFailed"] as const) {
      expect(dictionaries.ko[sentence]).not.toBe(dictionaries.en[sentence]);
    }
  });
});

describe("language", () => {
  it("is Korean when the browser asks for Korean before English", () => {
    expect(preferredLanguage(["ko-KR", "en-US"])).toBe("ko");
    expect(preferredLanguage(["ko"])).toBe("ko");
    expect(preferredLanguage(["en-US", "ko-KR"])).toBe("en");
    expect(preferredLanguage(["fr-FR", "ko-KR"])).toBe("ko");
    expect(preferredLanguage(["fr-FR"])).toBe("en");
    expect(preferredLanguage([])).toBe("en");
  });

  it("labels a discount rule's empty organization as any account, personal keys too, in both languages (C7)", () => {
    expect(dictionaries.en.anyAccount).toBe("any account (personal keys too)");
    expect(dictionaries.ko.anyAccount).toBe("모든 계정 (개인 키 포함)");
  });

  it("translates every message into both languages", () => {
    const english = Object.keys(dictionaries.en).sort();
    expect(Object.keys(dictionaries.ko).sort()).toEqual(english);
    for (const key of english) {
      expect(dictionaries.ko[key as keyof typeof dictionaries.ko], key).not.toBe("");
    }
  });
});

describe("charges CSV", () => {
  const entry: BillingHistoryEntry = {
    requestId: "req_1",
    account: { kind: "user", id: "mina" },
    keyId: "3fe9cf43-0000-4000-8000-000000000000",
    keyName: "batch, nightly",
    model: "alpha-5.4-mini",
    endpoint: "chat.completions",
    startedAt: "2026-11-23T11:26:11.000Z",
    chargedAt: "2026-11-23T11:26:12.000Z",
    amountWon: "0.082250",
    breakdown: {
      tokens: { input: 11, cached: null, output: 28, reasoning: 0 },
      inputUsdPerMillionTokens: "0.25",
      cachedInputUsdPerMillionTokens: "0.025",
      outputUsdPerMillionTokens: "2",
      usd: "0.00005875",
      fxRateKrwPerUsd: "1400",
      fxRateDate: "2026-11-23",
      discountRate: "0",
      amountWon: "0.082250",
      usageSource: "upstream",
    },
  };

  it("writes every field of the breakdown and the key's name, money as the exact string, not reported as empty", () => {
    const [header, row, end] = chargesCsv([entry]).split("\r\n");
    expect(header?.split(",")).toHaveLength(22);
    expect(header).toContain(",key_id,key_name,model,");
    expect(row).toBe(
      'req_1,user,mina,3fe9cf43-0000-4000-8000-000000000000,"batch, nightly",alpha-5.4-mini,chat.completions,' +
        "2026-11-23T11:26:11.000Z,2026-11-23T11:26:12.000Z,11,,28,0,0.25,0.025,2,0.00005875,1400,2026-11-23,0,0.082250,upstream",
    );
    // One schema with the server's exports, column for column.
    expect(`${header}\r\n`).toBe(billingCsvHeader());
    expect(end).toBe("");
  });

  it("is the same file written a page at a time: the header once, then each page's lines", () => {
    const entries = ["req_1", "req_2", "req_3"].map((requestId) => ({ ...entry, requestId }));
    expect(chargesCsvHeader() + chargesCsvRows(entries.slice(0, 2)) + chargesCsvRows(entries.slice(2))).toBe(
      chargesCsv(entries),
    );
    expect(chargesCsvRows([])).toBe("");
  });

  it("quotes and neutralises cells a spreadsheet would misread", () => {
    expect(csvField('a "b", c')).toBe('"a ""b"", c"');
    expect(csvField("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(csvField("-12.5")).toBe("-12.5");
    expect(csvField(null)).toBe("");
  });
});

describe("playground stream parsing", () => {
  it("takes whole events and keeps the unfinished tail", () => {
    const first = takeSseData('data: {"a":1}\n\ndata: {"b":');
    expect(first).toEqual({ payloads: ['{"a":1}'], rest: 'data: {"b":' });
    const second = takeSseData(`${first.rest}2}\r\n\r\ndata: [DONE]\n\n`);
    expect(second).toEqual({ payloads: ['{"b":2}', "[DONE]"], rest: "" });
  });
});

describe("usage chart series", () => {
  const day = (overrides: Partial<UsageDay>): UsageDay => ({
    day: "2026-11-22",
    model: "alpha-5.4-mini",
    keyId: "k1",
    keyName: "k1 name",
    requests: 1,
    amountWon: "0.5",
    inputTokens: 10,
    cachedTokens: 0,
    outputTokens: 5,
    reasoningTokens: 0,
    ...overrides,
  });

  it("has one row per day of the range, zero where nothing was used, summed per group", () => {
    const series = usageSeries(
      [day({}), day({ keyId: "k2", amountWon: "0.25" }), day({ day: "2026-11-24", model: "beta-3-flash" })],
      { from: "2026-11-22", to: "2026-11-24" },
      (row) => row.model,
      (row) => microWonOf(row.amountWon),
      (micro) => Number(wonOfMicroWon(micro)),
    );
    expect(series.period).toBe("day");
    expect(series.groups).toEqual(["alpha-5.4-mini", "beta-3-flash"]);
    expect(series.rows).toEqual([
      { start: "2026-11-22", "alpha-5.4-mini": 0.75, "beta-3-flash": 0 },
      { start: "2026-11-23", "alpha-5.4-mini": 0, "beta-3-flash": 0 },
      { start: "2026-11-24", "alpha-5.4-mini": 0, "beta-3-flash": 0.5 },
    ]);
  });

  it("charts a long range in longer periods, every day of it in a bar, the first clipped to the range", () => {
    expect(usagePeriodOf({ from: "2026-09-01", to: "2026-11-30" })).toBe("day");
    expect(usagePeriodOf({ from: "2025-11-30", to: "2026-11-30" })).toBe("week");
    expect(usagePeriodOf({ from: "2024-01-01", to: "2026-11-30" })).toBe("month");
    expect(usagePeriodOf({ from: "1990-01-01", to: "2026-11-30" })).toBe("year");
    const measure = [
      (row: UsageDay) => microWonOf(row.amountWon),
      (micro: bigint) => Number(wonOfMicroWon(micro)),
    ] as const;
    // Given usage on the first day and on days past the 400th of a range of almost three years:
    const months = usageSeries(
      [day({ day: "2024-01-01" }), day({ day: "2026-11-23" }), day({ day: "2026-11-30", amountWon: "2" })],
      { from: "2024-01-01", to: "2026-11-30" },
      (row) => row.model,
      ...measure,
    );
    expect(months.period).toBe("month");
    expect(months.rows).toHaveLength(35);
    expect(months.rows[0]).toEqual({ start: "2024-01-01", "alpha-5.4-mini": 0.5 });
    expect(months.rows.at(-1)).toEqual({ start: "2026-11-01", "alpha-5.4-mini": 2.5 });
    const weeks = usageSeries(
      [day({ day: "2025-12-03" }), day({ day: "2025-12-07" }), day({ day: "2025-12-08" })],
      { from: "2025-12-03", to: "2026-11-30" },
      (row) => row.model,
      ...measure,
    );
    // 2025-12-03 is a Wednesday: the first week is clipped to the range, the next starts on Monday 12-08.
    expect(weeks.rows.slice(0, 2)).toEqual([
      { start: "2025-12-03", "alpha-5.4-mini": 1 },
      { start: "2025-12-08", "alpha-5.4-mini": 0.5 },
    ]);
    expect(weeks.rows.at(-1)).toEqual({ start: "2026-11-30", "alpha-5.4-mini": 0 });
    const years = usageSeries([], { from: "0001-01-01", to: "9999-12-31" }, (row) => row.model, ...measure);
    expect(years.rows).toHaveLength(9999);
  });
});

describe("FX chart series", () => {
  it("given several records of one day, then keeps the day's latest, one point per day, oldest first", () => {
    const record = (appliesOn: string, rate: string, recordedAt: string, source = "admin") => ({
      appliesOn,
      rateDate: appliesOn,
      rate,
      source,
      recordedAt,
    });
    const points = fxSeries([
      record("2026-11-03", "1483.4", "2026-11-03T01:00:00.000Z"),
      record("2026-11-03", "1400", "2026-11-02T15:00:00.000Z", "default"),
      record("2026-11-01", "1390.123456789", "2026-10-31T15:00:00.000Z", "koreaexim"),
    ]);
    expect(points).toEqual([
      {
        day: "2026-11-01",
        dayMs: Date.UTC(2026, 10, 1),
        rate: 1390.123456789,
        rateText: "1390.123456789",
        source: "koreaexim",
      },
      { day: "2026-11-03", dayMs: Date.UTC(2026, 10, 3), rate: 1483.4, rateText: "1483.4", source: "admin" },
    ]);
    expect(fxSeries([])).toEqual([]);
  });
});

describe("chart axis ticks", () => {
  it("steps from 0 by 1, 2, 2.5 or 5 times a power of ten up to the largest value", () => {
    expect(niceTicks(79.59).ticks).toEqual([0, 20, 40, 60, 80]);
    expect(niceTicks(80).ticks).toEqual([0, 20, 40, 60, 80]);
    expect(niceTicks(81).ticks).toEqual([0, 25, 50, 75, 100]);
    expect(niceTicks(0.3).ticks).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(12_345).ticks).toEqual([0, 5_000, 10_000, 15_000]);
    expect(niceTicks(3, { integers: true }).ticks).toEqual([0, 1, 2, 3]);
    expect(niceTicks(0.4, { integers: true }).ticks).toEqual([0, 1]);
  });

  it("gives an empty chart an axis", () => {
    expect(niceTicks(0).ticks).toEqual([0, 1, 2, 3, 4]);
    expect(niceTicks(Number.NaN).top).toBe(4);
  });
});
