import type pg from "pg";
import { expect } from "vitest";
import { allProjections } from "../../projections";
import type { EventStore } from "../../src/ledger/store/event-store";
import { verifyProjections } from "../../src/ledger/verify-projections";

/**
 * One chat completion (JSON or streamed) as a client under a database fault sends it, and how it ended:
 * bounded by `timeoutMs`, so a request that would wait for ever ends the test with "no answer" instead.
 */
export interface GenerationOutcome {
  account: string;
  streamed: boolean;
  startedAtMs: number;
  tookMs: number;
  /** HTTP status, "cut" for a stream that began 200 and ended without its usage, or "no answer". */
  status: number | "cut" | "no answer";
  requestId: string | null;
  /** The error body of a refusal (C3). */
  errorBody?: { status?: unknown; message?: unknown };
  /** Output tokens the answer reported (a JSON body, a stream's last chunk). */
  outputTokens?: number;
}

export async function sendChat(
  baseUrl: string,
  request: { account: string; key: string; streamed: boolean; timeoutMs: number; maxTokens?: number },
): Promise<GenerationOutcome> {
  const startedAtMs = Date.now();
  const outcome: GenerationOutcome = {
    account: request.account,
    streamed: request.streamed,
    startedAtMs,
    tookMs: 0,
    status: "no answer",
    requestId: null,
  };
  try {
    const response = await fetch(`${baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${request.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gamma-4-3",
        max_tokens: request.maxTokens ?? 20,
        messages: [{ role: "user", content: `A question of ${request.account}` }],
        stream: request.streamed,
        ...(request.streamed ? { stream_options: { include_usage: true } } : {}),
      }),
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    outcome.requestId = response.headers.get("x-request-id");
    const text = await response.text();
    if (response.status !== 200) {
      outcome.status = response.status;
      outcome.errorBody = JSON.parse(text) as GenerationOutcome["errorBody"];
    } else if (request.streamed) {
      const usageLine = text
        .split("\n")
        .filter((line) => line.startsWith("data: {"))
        .map((line) => JSON.parse(line.slice("data: ".length)) as { usage?: { completion_tokens: number } })
        .find((chunk) => chunk.usage);
      outcome.status = usageLine ? 200 : "cut";
      outcome.outputTokens = usageLine?.usage?.completion_tokens;
    } else {
      outcome.status = 200;
      outcome.outputTokens = (
        JSON.parse(text) as { usage: { completion_tokens: number } }
      ).usage.completion_tokens;
    }
  } catch {
    // Timed out (or the connection dropped): the outcome says so.
  }
  outcome.tookMs = Date.now() - startedAtMs;
  return outcome;
}

/** C3's answer when the ledger cannot record usage: 503 and the error body, app status 300. */
export function expectLedgerUnavailable(outcome: GenerationOutcome): void {
  expect({ status: outcome.status, body: outcome.errorBody }).toEqual({
    status: 503,
    body: expect.objectContaining({
      status: 300,
      message: "The billing ledger is unavailable; try again shortly",
    }),
  });
}

/**
 * Every request billed as it ended, once the ledger has caught up: each answered one recorded and charged
 * exactly once (its usage stream `UsageAuthorized`, `UsageRecorded`, `UsageCharged`, or recorded without its
 * hold when that was lost), each refused one with no charge (no stream, or its hold voided), no hold left
 * open, and the projections as a fresh fold of the log makes them.
 */
export async function expectBilledAsAnswered(
  ledger: { pool: pg.Pool; store: EventStore },
  outcomes: readonly GenerationOutcome[],
): Promise<void> {
  const answered = outcomes.filter((outcome) => outcome.status === 200);
  const refused = outcomes.filter((outcome) => outcome.status !== 200);
  const streamsOf = async (requests: readonly GenerationOutcome[]) =>
    (
      await ledger.pool.query<{ stream_id: string; types: string[] }>(
        `SELECT stream_id, array_agg(type ORDER BY stream_version) AS types FROM ledger_events
         WHERE stream_id = ANY($1) GROUP BY stream_id`,
        [requests.map((outcome) => `usage-${outcome.requestId}`)],
      )
    ).rows;
  await expect
    .poll(
      async () =>
        (await streamsOf(answered)).filter((stream) => stream.types.includes("UsageCharged")).length,
      { timeout: 60_000, interval: 250 },
    )
    .toBe(answered.length);
  for (const stream of await streamsOf(answered))
    expect(
      stream.types.filter((type) => type === "UsageCharged"),
      stream.stream_id,
    ).toHaveLength(1);
  await expect
    .poll(async () => (await ledger.pool.query("SELECT 1 FROM request_holds")).rowCount, { timeout: 30_000 })
    .toBe(0);
  for (const stream of await streamsOf(refused))
    expect([["UsageAuthorized", "UsageVoided"]], stream.stream_id).toContainEqual(stream.types);
  expect(await verifyProjections({ ...ledger, projections: allProjections })).toEqual([]);
}

/** The account's balance as the balances projection has it, and that of the log: what was topped up less every charge. */
export async function expectBalanceIsCreditLessCharges(
  pool: pg.Pool,
  account: { kind: "user" | "organization"; id: string },
  toppedUpWon: string,
): Promise<void> {
  const { rows } = await pool.query<{ balance_won: string; charged_won: string }>(
    `SELECT funds.balance_won::text,
            (SELECT coalesce(sum((data->>'amountWon')::numeric), 0)::text FROM ledger_events
             WHERE type = 'UsageCharged' AND data->'account'->>'kind' = $1 AND data->'account'->>'id' = $2) AS charged_won
     FROM account_funds funds WHERE funds.account_kind = $1 AND funds.account_id = $2`,
    [account.kind, account.id],
  );
  const [funds] = rows;
  expect(funds).toBeDefined();
  expect(Number(funds!.balance_won)).toBeGreaterThanOrEqual(0);
  const { rows: difference } = await pool.query<{ equal: boolean }>(
    "SELECT $1::numeric = $2::numeric - $3::numeric AS equal",
    [funds!.balance_won, toppedUpWon, funds!.charged_won],
  );
  expect(difference[0]!.equal, `balance ${funds!.balance_won}, charged ${funds!.charged_won}`).toBe(true);
}
