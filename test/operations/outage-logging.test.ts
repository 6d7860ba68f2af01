import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturedLog } from "../support/captured-log";
import { type ConnectionCutter, cutterInFrontOf } from "../support/connection-cutter";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * A sustained PostgreSQL outage under traffic: every request is refused 503 and has its access line, but the
 * outage itself is said a few times, not once or more per request (a log storm that buries everything else
 * and costs the log pipeline most while it matters most) — and once more when it is over.
 */

interface Line {
  level: number;
  msg: string;
  requestId?: string;
  suppressedSinceLast?: number;
}

const requestsCount = 40;

describe("logging a ledger outage", () => {
  const { logger, lines } = capturedLog<Line>();
  let database: TestDatabase;
  let cutter: ConnectionCutter;
  let harness: GatewayHarness;

  beforeAll(async () => {
    database = await createTestDatabase("outage_logging");
    const behindCutter = await cutterInFrontOf(database.url);
    cutter = behindCutter.cutter;
    harness = await startGatewayHarness({
      database,
      service: { databaseUrl: behindCutter.url, logger },
    });
  }, 60_000);
  afterAll(async () => {
    cutter?.restore();
    await harness?.close();
    await cutter?.close();
    await database?.drop();
  });

  it("given PostgreSQL away, when many requests arrive, then each has its access line and the outage a line per part that met it, and one when it is over", async () => {
    // Given: a key with credit, and the ledger gone
    const key = (await harness.issueKey(await harness.session("outage"))).key;
    await harness.topUp({ kind: "user", id: "outage" }, "100000");
    const generate = () =>
      fetch(`${harness.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "alpha-5.4-mini", messages: [{ role: "user", content: "hi" }] }),
      });
    expect((await generate()).status).toBe(200);
    cutter.cut();
    const fromLine = lines.length;

    // When
    const statuses: number[] = [];
    for (let index = 0; index < requestsCount; index += 1) {
      const response = await generate();
      await response.text();
      statuses.push(response.status);
    }

    // Then: every request refused and logged, the outage said a few times, however many were refused
    expect(statuses).toEqual(Array.from({ length: requestsCount }, () => 503));
    const during = lines.slice(fromLine);
    expect(during.filter((line) => line.msg === "request")).toHaveLength(requestsCount);
    const timesSaid = new Map<string, number>();
    for (const line of during.filter((each) => each.level >= 40 && each.msg !== "request"))
      timesSaid.set(line.msg, (timesSaid.get(line.msg) ?? 0) + 1);
    // Each part that met the outage says so; the LISTEN connections are two.
    for (const [message, times] of timesSaid) expect(times, message).toBeLessThanOrEqual(2);

    // And when it is over: served again, and one line says so
    cutter.restore();
    await expect.poll(async () => (await generate()).status, { timeout: 30_000, interval: 250 }).toBe(200);
    expect(lines.filter((line) => line.msg === "placing holds works again")).toHaveLength(1);
  }, 120_000);
});
