import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GatewaySession } from "../../../src/billing/holds/gateway-session";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * A gateway's session (C10): the lock the orphan sweep reads to tell a gateway that died — which will bill
 * nothing more — from one paused or cut off, which may: held while the process runs, taken again when its
 * connection is lost, and freed the moment its connection closes.
 */

describe("a gateway's session", () => {
  let harness: LedgerHarness;
  const isAlive = async (instanceId: string) =>
    (
      await harness.ledger.pool.query<{ alive: boolean }>(
        "SELECT ledger_gateway_session_alive($1) AS alive",
        [instanceId],
      )
    ).rows[0]!.alive;
  /** The backend holding the instance's session, as pg_locks shows it. */
  const backendOf = async (instanceId: string) =>
    (
      await harness.ledger.pool.query<{ pid: number }>(
        `SELECT locks.pid FROM pg_locks locks
         WHERE locks.locktype = 'advisory' AND locks.granted AND locks.objsubid = 2
           AND locks.objid = (hashtext($1)::bigint & 4294967295)::oid`,
        [instanceId],
      )
    ).rows[0]?.pid;

  beforeAll(async () => {
    harness = await openLedgerHarness("gateway_session");
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given a gateway that took its session, then it is alive until it stops, and another instance never is", async () => {
    const session = new GatewaySession(harness.ledger.pool, "gateway-one", 50, pino({ level: "silent" }), {
      onLost: () => {},
      onTaken: () => {},
    });
    await session.start();

    expect(await isAlive("gateway-one")).toBe(true);
    expect(await isAlive("gateway-other")).toBe(false);

    await session.stop();
    await vi.waitFor(async () => expect(await isAlive("gateway-one")).toBe(false), { timeout: 5_000 });
  });

  it("given its session's connection ended by the server, then the gateway is told, and takes its session again", async () => {
    const told: string[] = [];
    const session = new GatewaySession(harness.ledger.pool, "gateway-reset", 50, pino({ level: "silent" }), {
      onLost: () => told.push("lost"),
      onTaken: () => told.push("taken"),
    });
    await session.start();
    const first = await backendOf("gateway-reset");

    await harness.ledger.pool.query("SELECT pg_terminate_backend($1)", [first]);

    await vi.waitFor(
      async () => {
        const backend = await backendOf("gateway-reset");
        expect(backend).toBeDefined();
        expect(backend).not.toBe(first);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(await isAlive("gateway-reset")).toBe(true);
    // The process was told, so its requests' output waited meanwhile (hold-progress.ts).
    expect(told).toEqual(["taken", "lost", "taken"]);
    await session.stop();
  });
});
