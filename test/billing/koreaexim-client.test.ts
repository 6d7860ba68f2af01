import { inspect } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createKoreaeximClient,
  type KoreaeximClient,
  type KoreaeximLimits,
} from "../../src/billing/fx/koreaexim-client";
import {
  KoreaeximError,
  KoreaeximHttpStatusError,
  KoreaeximMalformedResponseError,
  KoreaeximNoRateFoundError,
  KoreaeximResultCodeError,
  KoreaeximUnavailableError,
} from "../../src/billing/fx/koreaexim-errors";
import { type FakeKoreaeximServer, startFakeKoreaeximServer } from "./fake-koreaexim-server";

const authkey = "TestAuthkey0123456789SecretValue";
/**
 * Per request: long enough that the fake bank on 127.0.0.1 always answers within it, however loaded the
 * machine (a spurious timeout would add a retry to counts asserted exactly); the tests of a bank that hangs
 * use their own client with `hangTimeoutMs`.
 */
const requestTimeoutMs = 5_000;
const hangTimeoutMs = 300;

let bank: FakeKoreaeximServer;
let client: KoreaeximClient;
let sleptMs: number[];
let logLines: string[];

function connect(options: { authkey?: string; url?: string; limits?: Partial<KoreaeximLimits> } = {}) {
  return createKoreaeximClient({
    authkey: options.authkey ?? authkey,
    url: options.url ?? bank.url,
    limits: { requestTimeoutMs, ...options.limits },
    sleep: async (delayMs) => {
      sleptMs.push(delayMs);
    },
    logger: {
      info: (details, message) => logLines.push(`${message} ${JSON.stringify(details)}`),
      warn: (details, message) => logLines.push(`${message} ${JSON.stringify(details)}`),
    },
  });
}

function searchedDates(): Array<string | null> {
  return bank.requests().map((request) => request.searchDate);
}

async function failureOf(promise: Promise<unknown>): Promise<KoreaeximError> {
  const error = await promise.then(
    () => {
      throw new Error("expected a failure, got a quote");
    },
    (rejection: unknown) => rejection,
  );
  expect(error).toBeInstanceOf(KoreaeximError);
  return error as KoreaeximError;
}

function everythingSaidAbout(error: Error): string {
  return [
    error.message,
    error.stack,
    String(error),
    JSON.stringify(error),
    inspect(error, { depth: 10 }),
  ].join("\n");
}

beforeEach(async () => {
  bank = await startFakeKoreaeximServer({ authkey });
  sleptMs = [];
  logLines = [];
  client = connect();
});

afterEach(async () => {
  await client.close();
  await bank.close();
});

describe("Korea Eximbank client: which rate applies on a Seoul date (C7)", () => {
  it("on a normal day uses the previous day's USD deal_bas_r, thousands separators stripped", async () => {
    // given Tuesday 2026-03-03 was a business day with USD at "1,483.4"
    bank.script("20260303", { kind: "business-day", usdDealBaseRate: "1,483.4" });
    // when the rate for Wednesday 2026-03-04 is fetched
    const quote = await client.fetchRateApplyingOn("2026-03-04");
    // then
    expect(quote).toEqual({
      appliesOn: "2026-03-04",
      rateDate: "2026-03-03",
      rateKrwPerUsd: "1483.4",
      source: "koreaexim",
    });
    expect(bank.requests()).toEqual([{ searchDate: "20260303", authkey, dataCode: "AP01" }]);
  });

  it("on a Monday walks back over Sunday and Saturday to Friday", async () => {
    // given Friday 2026-03-06 published a rate; the weekend answers empty (unscripted)
    bank.script("20260306", { kind: "business-day", usdDealBaseRate: "1,479.15" });
    // when
    const quote = await client.fetchRateApplyingOn("2026-03-09");
    // then
    expect(quote.rateDate).toBe("2026-03-06");
    expect(quote.rateKrwPerUsd).toBe("1479.15");
    expect(searchedDates()).toEqual(["20260308", "20260307", "20260306"]);
  });

  it("walks back over a holiday: Seollal 2026-02-16..18 and the weekend before it", async () => {
    // given Friday 2026-02-13 was the last business day before the Lunar New Year holidays
    bank.script("20260213", { kind: "business-day", usdDealBaseRate: "1,450.2" });
    // when the rate for Thursday 2026-02-19 is fetched
    const quote = await client.fetchRateApplyingOn("2026-02-19");
    // then
    expect(quote).toMatchObject({ appliesOn: "2026-02-19", rateDate: "2026-02-13", rateKrwPerUsd: "1450.2" });
    expect(searchedDates()).toEqual(["20260218", "20260217", "20260216", "20260215", "20260214", "20260213"]);
  });

  it("walks back when D−1 answers empty (e.g. not yet published) and records the older rate date", async () => {
    // given Wednesday 2026-03-04 has nothing yet (as before ~11:00 KST that day) but Tuesday has a rate
    bank.script("20260304", { kind: "no-rate-published" });
    bank.script("20260303", { kind: "business-day", usdDealBaseRate: "1,483.4" });
    // when the rate for Thursday 2026-03-05 is fetched
    const quote = await client.fetchRateApplyingOn("2026-03-05");
    // then C7's rule is followed as for a holiday, and the quote says which date it used
    expect(quote.rateDate).toBe("2026-03-03");
    expect(searchedDates()).toEqual(["20260304", "20260303"]);
  });

  it("fails after 10 empty days instead of reaching further back", async () => {
    // given nothing published for ten days before 2026-03-11, and a rate eleven days before
    bank.script("20260228", { kind: "business-day", usdDealBaseRate: "1,440" });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-11"));
    // then
    expect(error).toBeInstanceOf(KoreaeximNoRateFoundError);
    expect(error).toMatchObject({
      appliesOn: "2026-03-11",
      latestSearchDate: "2026-03-10",
      earliestSearchDate: "2026-03-01",
      daysSearched: 10,
    });
    expect(searchedDates()).toHaveLength(10);
    expect(searchedDates()).not.toContain("20260228");
  });

  it("takes D from the Seoul calendar: 2026-03-02T15:30Z is 2026-03-03 in Seoul", async () => {
    // given
    bank.script("20260302", { kind: "business-day", usdDealBaseRate: "1,483.4" });
    // when
    const quote = await client.fetchRateApplyingAt(new Date("2026-03-02T15:30:00Z"));
    // then
    expect(quote).toMatchObject({ appliesOn: "2026-03-03", rateDate: "2026-03-02" });
    expect(searchedDates()[0]).toBe("20260302");
  });

  it("one millisecond before Seoul midnight is still the earlier date", async () => {
    // given
    bank.script("20260301", { kind: "business-day", usdDealBaseRate: "1,483.4" });
    // when
    const quote = await client.fetchRateApplyingAt(new Date("2026-03-02T14:59:59.999Z"));
    // then
    expect(quote).toMatchObject({ appliesOn: "2026-03-02", rateDate: "2026-03-01" });
  });
});

describe("Korea Eximbank client: refusals are errors, not rates", () => {
  it("reports result 3 for a wrong authkey, without retrying or walking back", async () => {
    // given a client holding a key the bank does not know
    await client.close();
    client = connect({ authkey: "WrongAuthkey9876543210" });
    bank.script("20260303", { kind: "business-day", usdDealBaseRate: "1,483.4" });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toBeInstanceOf(KoreaeximResultCodeError);
    expect(error).toMatchObject({ resultCode: 3, reason: "authkey-error", searchDate: "2026-03-03" });
    expect(bank.requests()).toHaveLength(1);
    expect(sleptMs).toEqual([]);
  });

  it("reports result 4 when the daily request limit is exhausted", async () => {
    // given
    bank.script("20260303", { kind: "refusal", resultCode: 4 });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toBeInstanceOf(KoreaeximResultCodeError);
    expect(error).toMatchObject({ resultCode: 4, reason: "daily-request-limit-exceeded" });
    expect(bank.requests()).toHaveLength(1);
  });

  it("reports result 4 met mid-walk rather than skipping that date", async () => {
    // given Sunday is empty and the limit runs out on Saturday, while Friday has a rate
    bank.script("20260307", { kind: "refusal", resultCode: 4 });
    bank.script("20260306", { kind: "business-day", usdDealBaseRate: "1,479.15" });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-09"));
    // then
    expect(error).toMatchObject({ kind: "result-code", resultCode: 4, searchDate: "2026-03-07" });
    expect(searchedDates()).toEqual(["20260308", "20260307"]);
  });
});

describe("Korea Eximbank client: transient failures are retried with bounded backoff", () => {
  it("retries an HTTP 500 and then uses the answer", async () => {
    // given the bank fails once, then answers
    bank.script(
      "20260303",
      { kind: "http-status", status: 500 },
      { kind: "business-day", usdDealBaseRate: "1,483.4" },
    );
    // when
    const quote = await client.fetchRateApplyingOn("2026-03-04");
    // then
    expect(quote.rateKrwPerUsd).toBe("1483.4");
    expect(searchedDates()).toEqual(["20260303", "20260303"]);
    expect(sleptMs).toEqual([1_000]);
  });

  it("gives up after four attempts with doubling delays", async () => {
    // given the bank keeps answering 503
    bank.script("20260303", { kind: "http-status", status: 503 });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toBeInstanceOf(KoreaeximUnavailableError);
    expect(error).toMatchObject({ attempts: 4, lastFailure: "server-error", lastFailureDetail: "503" });
    expect(sleptMs).toEqual([1_000, 2_000, 4_000]);
    expect(bank.requests()).toHaveLength(4);
  });

  it("caps the delay at backoffMaxMs", async () => {
    // given a client allowed six attempts and the bank always failing
    await client.close();
    client = connect({ limits: { attemptsPerDateMax: 6 } });
    bank.script("20260303", { kind: "http-status", status: 502 });
    // when
    await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(sleptMs).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
  });

  it("times out a request that hangs and retries it", async () => {
    // given the first request never gets an answer
    bank.script("20260303", { kind: "hang" }, { kind: "business-day", usdDealBaseRate: "1,483.4" });
    await client.close();
    client = connect({ limits: { requestTimeoutMs: hangTimeoutMs } });
    // when
    const quote = await client.fetchRateApplyingOn("2026-03-04");
    // then
    expect(quote.rateDate).toBe("2026-03-03");
    expect(sleptMs).toEqual([1_000]);
    expect(logLines.some((line) => line.includes('"failure":"timeout"'))).toBe(true);
  });

  it("retries a refused connection and names the error code when it gives up", async () => {
    // given a URL where nothing listens
    const closedBank = await startFakeKoreaeximServer({ authkey });
    const closedUrl = closedBank.url;
    await closedBank.close();
    await client.close();
    client = connect({ url: closedUrl });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toMatchObject({
      kind: "unavailable",
      lastFailure: "network",
      lastFailureDetail: "ECONNREFUSED",
    });
    expect(sleptMs).toEqual([1_000, 2_000, 4_000]);
  });
});

describe("Korea Eximbank client: answers retrying cannot fix", () => {
  it("does not follow a redirect, which would carry the authkey elsewhere", async () => {
    // given the bank redirects to another host
    bank.script("20260303", { kind: "http-status", status: 302, location: "http://127.0.0.1:9/elsewhere" });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toBeInstanceOf(KoreaeximHttpStatusError);
    expect(error).toMatchObject({ status: 302 });
    expect(bank.requests()).toHaveLength(1);
  });

  it("does not retry a 404", async () => {
    // given
    bank.script("20260303", { kind: "http-status", status: 404 });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toMatchObject({ kind: "http-status", status: 404 });
    expect(sleptMs).toEqual([]);
  });

  it("rejects an HTML page served with status 200", async () => {
    // given a maintenance page instead of JSON
    bank.script("20260303", { kind: "raw-body", body: "<html><body>점검 중</body></html>" });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toBeInstanceOf(KoreaeximMalformedResponseError);
  });

  it("rejects a body larger than the limit", async () => {
    // given a client that accepts at most 1 KiB and a full answer of about 6 KiB
    await client.close();
    client = connect({ limits: { responseBodyBytesMax: 1_024 } });
    bank.script("20260303", { kind: "business-day", usdDealBaseRate: "1,483.4" });
    // when
    const error = await failureOf(client.fetchRateApplyingOn("2026-03-04"));
    // then
    expect(error).toBeInstanceOf(KoreaeximMalformedResponseError);
    expect(error.message).toContain("1024 bytes");
  });
});

describe("Korea Eximbank client: the authkey never leaks", () => {
  it("appears in no error and no log line, whatever went wrong", async () => {
    // given one failure of every kind
    bank.script("20260303", { kind: "refusal", resultCode: 4 });
    bank.script("20260203", { kind: "http-status", status: 500 });
    bank.script("20260103", { kind: "hang" });
    bank.script("20251203", { kind: "raw-body", body: `echo ${authkey}` });
    bank.script("20251103", {
      kind: "http-status",
      status: 302,
      location: `http://127.0.0.1:9/?authkey=${authkey}`,
    });
    const closedBank = await startFakeKoreaeximServer({ authkey });
    await closedBank.close();
    const unreachable = connect({ url: closedBank.url });
    const hanging = connect({ limits: { requestTimeoutMs: hangTimeoutMs } });
    // when
    const errors = await Promise.all([
      failureOf(client.fetchRateApplyingOn("2026-03-04")),
      failureOf(client.fetchRateApplyingOn("2026-02-04")),
      failureOf(hanging.fetchRateApplyingOn("2026-01-04")),
      failureOf(client.fetchRateApplyingOn("2025-12-04")),
      failureOf(client.fetchRateApplyingOn("2025-11-04")),
      failureOf(client.fetchRateApplyingOn("2025-10-04")),
      failureOf(unreachable.fetchRateApplyingOn("2026-03-04")),
    ]);
    await unreachable.close();
    await hanging.close();
    // then the key was sent, but is said nowhere
    expect(bank.requests().every((request) => request.authkey === authkey)).toBe(true);
    expect(errors.map((error) => error.kind)).toEqual([
      "result-code",
      "unavailable",
      "unavailable",
      "malformed-response",
      "http-status",
      "no-rate-found",
      "unavailable",
    ]);
    for (const error of errors) expect(everythingSaidAbout(error)).not.toContain(authkey);
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) expect(line).not.toContain(authkey);
  });

  it("refuses to start without an authkey", () => {
    expect(() => createKoreaeximClient({ authkey: " " })).toThrow(RangeError);
  });
});
