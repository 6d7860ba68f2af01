import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import {
  checkpointSignedByAnotherKey,
  OnDemandLedgerVerifier,
} from "../../../src/ledger/integrity/ledger-status";
import { topUp } from "../../console/support/patient";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * The ledger's integrity for admins: the latest signed checkpoint and its own checks at constant cost, and
 * the whole verification on demand (small logs only), against a gateway whose checkpointer signs.
 */

const signingKey = LedgerSigningKey.parse(Buffer.alloc(32, 7).toString("base64"));

interface Status {
  store: string;
  signingKeyConfigured: boolean;
  latest: {
    checkpoint: { sequence: number; eventCount: number; sealedAt: string; checkpointHash: string };
    hashMatches: boolean;
    signatureValid: boolean | null;
    chainsToPrevious: boolean;
  } | null;
  unsealedEventCount: number;
  unsealedEventCountIsLowerBound: boolean;
}
interface Verification {
  outcome: string;
  report: { problems: string[]; eventCount: number; checkpointCount: number; signaturesChecked: boolean };
}

let harness: GatewayHarness;
const admin = (method: string, path: string) =>
  fetch(`${harness.url}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${testSecrets.adminToken}` },
  });

/** Commits a change the immutability triggers forbid, as an attacker with the database could. */
async function tamper(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: harness.database.url });
  await client.connect();
  try {
    await client.query("BEGIN");
    await client.query("ALTER TABLE ledger_events DISABLE TRIGGER ledger_events_immutable");
    await client.query("ALTER TABLE ledger_checkpoints DISABLE TRIGGER ledger_checkpoints_immutable");
    await client.query(sql);
    await client.query("ALTER TABLE ledger_events ENABLE TRIGGER ledger_events_immutable");
    await client.query("ALTER TABLE ledger_checkpoints ENABLE TRIGGER ledger_checkpoints_immutable");
    await client.query("COMMIT");
  } finally {
    await client.end();
  }
}

async function sealedStatus(): Promise<Status> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const status = (await (await admin("GET", "/ledger/status")).json()) as Status;
    if (status.latest !== null) return status;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("no checkpoint sealed within 10 s");
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "ledger_status",
    billing: {},
    service: { adminToken: testSecrets.adminToken, ledgerSigningKey: signingKey },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

describe("GET /admin/ledger/status", () => {
  it("given the checkpointer sealed the seeded events, then shows the latest checkpoint, intact and signed", async () => {
    const status = await sealedStatus();
    expect(status).toMatchObject({
      store: "postgresql",
      signingKeyConfigured: true,
      latest: {
        checkpoint: { sequence: 1 },
        hashMatches: true,
        signatureValid: true,
        chainsToPrevious: true,
      },
      unsealedEventCountIsLowerBound: false,
    });
    expect(status.latest!.checkpoint.eventCount).toBeGreaterThan(0);
    expect(Date.parse(status.latest!.checkpoint.sealedAt)).not.toBeNaN();
  });

  it("given a process with another signing key, then finds that its key did not sign the latest checkpoint", async () => {
    const latest = (await sealedStatus()).latest!.checkpoint.sequence;
    const other = LedgerSigningKey.parse(Buffer.alloc(32, 9).toString("base64"));
    const pool = harness.service.ledger.pool;
    expect(await checkpointSignedByAnotherKey(pool, signingKey.publicKey)).toBeUndefined();
    expect(await checkpointSignedByAnotherKey(pool, other.publicKey)).toBeGreaterThanOrEqual(latest);
  });

  it("refuses without the admin token", async () => {
    expect((await fetch(`${harness.url}/admin/ledger/status`)).status).toBe(401);
    expect((await fetch(`${harness.url}/admin/ledger/verify`, { method: "POST" })).status).toBe(401);
  });
});

describe("POST /admin/ledger/verify", () => {
  it("given a clean ledger, then every chain and checkpoint verifies, signatures checked", async () => {
    await topUp(harness, { kind: "user", id: "verifier" }, "1000");
    const response = await admin("POST", "/ledger/verify");
    expect(response.status).toBe(200);
    const verification = (await response.json()) as Verification;
    expect(verification.outcome).toBe("verified");
    expect(verification.report).toMatchObject({ problems: [], signaturesChecked: true });
    expect(verification.report.checkpointCount).toBeGreaterThanOrEqual(1);
    expect(verification.report.eventCount).toBeGreaterThan(0);
  });

  it("given a log bigger than the on-demand bound, then answers too-large with the command, verifying nothing", async () => {
    const pool = new pg.Pool({ connectionString: harness.database.url, max: 1 });
    try {
      const verifier = new OnDemandLedgerVerifier(pool, signingKey.publicKey, 1);
      // Two requests at once share one run.
      const [first, second] = await Promise.all([verifier.verify(), verifier.verify()]);
      expect(first).toBe(second);
      expect(first).toEqual({ outcome: "too-large", eventsMax: 1, command: "npm run ledger -- verify" });
    } finally {
      await pool.end();
    }
  });

  it("given an event changed and the checkpoint's signature forged in the database, then both are named", async () => {
    await tamper(
      `UPDATE ledger_events SET data = jsonb_set(data::jsonb, '{amountWon}', '"999999"')::json
       WHERE type = 'CreditToppedUp' AND stream_id = 'account-user-verifier'`,
    );
    const verification = (await (await admin("POST", "/ledger/verify")).json()) as Verification;
    expect(verification.outcome).toBe("verified");
    expect(verification.report.problems.join("\n")).toContain("account-user-verifier");

    await tamper(
      `UPDATE ledger_checkpoints SET signature = decode(repeat('00', 64), 'hex')
       WHERE sequence = (SELECT max(sequence) FROM ledger_checkpoints)`,
    );
    const status = (await (await admin("GET", "/ledger/status")).json()) as Status;
    expect(status.latest).toMatchObject({ hashMatches: true, signatureValid: false });
    const afterForgery = (await (await admin("POST", "/ledger/verify")).json()) as Verification;
    expect(afterForgery.report.problems.join("\n")).toContain(
      `checkpoint #${status.latest!.checkpoint.sequence}: signature is not valid`,
    );
  });
});
