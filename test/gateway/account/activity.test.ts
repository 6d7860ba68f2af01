import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ActivityEntry, ActivityPage } from "../../../src/gateway/activity/activity-read-model";
import { metricsRegistry } from "../../../src/kernel/metrics-registry";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * The activity log through the real gateway, billing and PostgreSQL: every generation request a user's key
 * made — served, refused, failed, cut — is listed newest first with its status, timings, tokens and (once
 * charged) its cost, a page at a time and filtered; the admin API shows any account's.
 */

let harness: GatewayHarness;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "activity",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});
beforeEach(() => harness.simulator.setFault(undefined));

async function get(path: string, token: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${harness.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The first page once it holds `count` rows and `ready` says so (rows are written in batches, off the path). */
async function activityOnceSettled(
  path: string,
  token: string,
  ready: (page: ActivityPage) => boolean,
): Promise<ActivityPage> {
  let page: ActivityPage | undefined;
  for (let attempt = 0; attempt < 100; attempt++) {
    const reply = await get(path, token);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    page = reply.body as unknown as ActivityPage;
    if (ready(page)) return page;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`activity never settled: ${JSON.stringify(page)}`);
}

function requestIdOf(error: unknown): string {
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const id = (error as InstanceType<typeof OpenAI.APIError>).requestID;
  expect(id).toMatch(/^req_/);
  return id!;
}

async function failureOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error("the call was expected to fail");
}

describe("GET /llm/usage/activity", () => {
  it("given a served, a refused, a failed and a cut request, then each is listed newest first with its outcome, and the served one with its cost", async () => {
    // Given
    const session = await harness.session("ara");
    const { uuid: keyId, key } = await harness.issueKey(session, { name: "main" });
    await harness.topUp({ kind: "user", id: "ara" }, "1000");
    const client = harness.openai(key);
    const message = [{ role: "user" as const, content: "Tell me about the sea" }];

    // When: served (JSON)
    const served = await client.chat.completions
      .create({ model: "alpha-5.4", max_tokens: 40, messages: message })
      .withResponse();
    const servedId = served.response.headers.get("x-request-id")!;
    // refused: a model the gateway does not serve
    const refusedId = requestIdOf(
      await failureOf(client.chat.completions.create({ model: "no-such-model", messages: message })),
    );
    // failed: the upstream answers 500
    harness.simulator.setFault({ kind: "status", status: 500, message: "upstream exploded" });
    const failedId = requestIdOf(
      await failureOf(client.chat.completions.create({ model: "alpha-5.4", messages: message })),
    );
    // cut: a stream that stalls after two deltas, which the client gives up on
    harness.simulator.setFault({ kind: "break-stream", afterDeltas: 2, mode: "stall" });
    const stream = await client.responses
      .create({ model: "alpha-5.4", input: "Tell me about the sea", stream: true })
      .withResponse();
    const cutId = stream.response.headers.get("x-request-id")!;
    for await (const event of stream.data) {
      if (event.type === "response.output_text.delta") {
        stream.data.controller.abort();
        break;
      }
    }

    // Then
    const page = await activityOnceSettled(
      "/llm/usage/activity",
      session,
      // Both requests that produced output are charged: the served one and the cut one.
      (candidate) =>
        candidate.data.length === 4 &&
        candidate.data[0]?.costWon !== null &&
        candidate.data.at(-1)?.costWon !== null,
    );
    expect(page.data.map((entry) => entry.requestId)).toEqual([cutId, failedId, refusedId, servedId]);
    const [cut, failed, refused, servedEntry] = page.data as [
      ActivityEntry,
      ActivityEntry,
      ActivityEntry,
      ActivityEntry,
    ];
    expect(servedEntry).toMatchObject({
      model: "alpha-5.4",
      keyId,
      keyPreview: `svc_${key.slice(4, 8)}…${key.slice(-4)}`,
      endpoint: "chat.completions",
      streamed: false,
      httpStatus: 200,
      outcome: "served",
      errorType: null,
      tokens: {
        input: served.data.usage!.prompt_tokens,
        output: served.data.usage!.completion_tokens,
      },
    });
    expect(servedEntry.costWon).toMatch(/^\d+(\.\d+)?$/);
    expect(Number(servedEntry.costWon)).toBeGreaterThan(0);
    expect(servedEntry.latencyMs).toBeGreaterThan(0);
    expect(servedEntry.outputTokensPerSecond).toBeGreaterThan(0);
    expect(refused).toMatchObject({
      model: "no-such-model",
      httpStatus: 404,
      outcome: "refused",
      errorType: "not_found_error",
      tokens: null,
      costWon: null,
    });
    expect(failed).toMatchObject({
      model: "alpha-5.4",
      httpStatus: 500,
      outcome: "failed",
      errorType: "model_processing_error",
      tokens: null,
      costWon: null,
    });
    expect(cut).toMatchObject({
      model: "alpha-5.4",
      endpoint: "responses",
      streamed: true,
      httpStatus: 200,
      outcome: "cut",
      errorType: "client_disconnected",
    });
    expect(cut.timeToFirstTokenMs).toBeGreaterThan(0);
    expect(cut.tokens?.output).toBeGreaterThan(0);

    // Filters: by outcome, status, model and key.
    const refusedOnly = await get("/llm/usage/activity?outcome=refused", session);
    expect((refusedOnly.body as unknown as ActivityPage).data.map((entry) => entry.requestId)).toEqual([
      refusedId,
    ]);
    const status500 = await get("/llm/usage/activity?status=500", session);
    expect((status500.body as unknown as ActivityPage).data.map((entry) => entry.requestId)).toEqual([
      failedId,
    ]);
    const byModel = await get("/llm/usage/activity?model=no-such-model", session);
    expect((byModel.body as unknown as ActivityPage).data).toHaveLength(1);
    const otherKey = await get("/llm/usage/activity?keyId=00000000-0000-4000-8000-000000000000", session);
    expect((otherKey.body as unknown as ActivityPage).data).toEqual([]);
    const future = await get("/llm/usage/activity?from=2999-01-01", session);
    expect((future.body as unknown as ActivityPage).data).toEqual([]);

    // Another user sees none of it; the admin sees the same page for this account.
    expect((await get("/llm/usage/activity", await harness.session("stranger"))).body).toEqual({
      data: [],
      nextCursor: null,
    });
    const asAdmin = await get("/admin/activity?account=user:ara", testSecrets.adminToken);
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body).toEqual(page);
  }, 60_000);

  it("given more requests than a page, when paging by cursor, then every request is listed once, newest first", async () => {
    // Given: a rate limit of 3, so five calls give three served and two 429s
    const session = await harness.session("bom");
    const { uuid, key } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: "bom" }, "1000");
    const put = await fetch(`${harness.url}/llm/apis/${uuid}/limits`, {
      method: "PUT",
      headers: { authorization: `Bearer ${session}`, "content-type": "application/json" },
      body: JSON.stringify({ rateLimitRequestsPerMinute: 3 }),
    });
    expect(put.status).toBe(200);
    const second = new Date().getUTCSeconds();
    if (second > 50) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1_000));
    const client = harness.openai(key);
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      try {
        const reply = await client.chat.completions
          .create({
            model: "beta-3-flash",
            max_tokens: 10,
            messages: [{ role: "user", content: `n${index}` }],
          })
          .withResponse();
        ids.push(reply.response.headers.get("x-request-id")!);
      } catch (error) {
        ids.push(requestIdOf(error));
      }
    }

    // When
    await activityOnceSettled("/llm/usage/activity", session, (page) => page.data.length === 5);
    const seen: ActivityEntry[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const reply = await get(
        `/llm/usage/activity?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        session,
      );
      const page = reply.body as unknown as ActivityPage;
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data);
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 10);

    // Then
    expect(pages).toBe(3);
    expect(seen.map((entry) => entry.requestId)).toEqual([...ids].reverse());
    expect(seen.map((entry) => entry.httpStatus)).toEqual([429, 429, 200, 200, 200]);
    expect(seen[0]).toMatchObject({ outcome: "refused", errorType: "rate_limit_error", costWon: null });
    const limited = await get("/llm/usage/activity?status=429", session);
    expect((limited.body as unknown as ActivityPage).data).toHaveLength(2);

    // A cursor of bom's pages is no position among another account's rows: refused, never a page of them.
    const firstPage = (await get("/llm/usage/activity?limit=2", session)).body as unknown as ActivityPage;
    expect(firstPage.nextCursor).not.toBeNull();
    const bomsCursor = encodeURIComponent(firstPage.nextCursor!);
    for (const reply of [
      await get(`/llm/usage/activity?cursor=${bomsCursor}`, await harness.session("another")),
      await get(
        `/llm/usage/activity?isOrganization=true&cursor=${bomsCursor}`,
        await harness.session("bom", "bom-org"),
      ),
      await get(`/admin/activity?account=user:another&cursor=${bomsCursor}`, testSecrets.adminToken),
    ])
      expect(reply).toMatchObject({
        status: 400,
        body: { status: 100, message: expect.stringContaining("cursor") },
      });
    expect(
      (await get(`/admin/activity?account=user:bom&limit=2&cursor=${bomsCursor}`, testSecrets.adminToken))
        .status,
    ).toBe(200);
  }, 120_000);

  it("refuses a bad cursor, filter or page size with 400/100 naming the field", async () => {
    const session = await harness.session("cho");
    for (const [query, field] of [
      ["cursor=bm90LWEtY3Vyc29y", "cursor"],
      [`cursor=${Buffer.from('["2026-13-01T00:00:00.000Z","r"]').toString("base64url")}`, "cursor"],
      [`cursor=${Buffer.from('["0000-01-01T00:00:00.000Z","r"]').toString("base64url")}`, "cursor"],
      ["from=0000-01-01T00:00:00Z", "from"],
      ["limit=0", "limit"],
      ["limit=501", "limit"],
      ["status=abc", "status"],
      ["outcome=lost", "outcome"],
      ["keyId=not-a-uuid", "keyId"],
      ["from=yesterday", "from"],
      ["isOrganization=true", "isOrganization"],
    ] as const) {
      const reply = await get(`/llm/usage/activity?${query}`, session);
      expect(reply.status, query).toBe(400);
      expect(reply.body).toMatchObject({ status: 100, message: expect.stringContaining(field) });
    }
    const admin = await get("/admin/activity?account=nobody", testSecrets.adminToken);
    expect(admin).toMatchObject({ status: 400, body: { status: 100 } });
  });
});

describe("the request log's cost on the request path", () => {
  it("given 200 requests at once, then their rows are written by at most one multi-row INSERT per flush, none dropped", async () => {
    // Given
    const session = await harness.session("dal");
    const { key } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: "dal" }, "10000");
    const before = await requestLogCounters();
    const startedAtMs = Date.now();

    // When
    const client = harness.openai(key);
    await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        client.chat.completions.create({
          model: "alpha-5.4",
          max_tokens: 5,
          messages: [{ role: "user", content: `hello ${index}` }],
        }),
      ),
    );
    await activityOnceSettled("/llm/usage/activity?limit=500", session, (page) => page.data.length === 200);
    const elapsedMs = Date.now() - startedAtMs;

    // Then
    const after = await requestLogCounters();
    const rows = after.written - before.written;
    const batches = after.batches - before.batches;
    expect(rows).toBe(200);
    expect(after.dropped - before.dropped).toBe(0);
    // At most one INSERT per flush interval (250 ms) or per full batch (500 rows), whatever the request rate.
    expect(batches).toBeGreaterThan(0);
    expect(batches).toBeLessThanOrEqual(Math.ceil(elapsedMs / 250) + Math.ceil(rows / 500) + 1);
    console.info(
      `request log: ${rows} rows in ${batches} INSERTs over ${elapsedMs} ms (${(batches / rows).toFixed(3)} per request)`,
    );
  }, 60_000);
});

async function requestLogCounters(): Promise<{ written: number; dropped: number; batches: number }> {
  const metrics = await metricsRegistry.getMetricsAsJSON();
  const rows = metrics.find((metric) => metric.name === "won_gateway_request_log_rows_total");
  const batches = metrics.find((metric) => metric.name === "won_gateway_request_log_batches_total");
  const rowsOf = (result: string) =>
    Number(rows?.values.find((value) => value.labels.result === result)?.value ?? 0);
  return {
    written: rowsOf("written"),
    dropped: rowsOf("dropped"),
    batches: Number(batches?.values[0]?.value ?? 0),
  };
}
