import { describe, expect, it } from "vitest";
import { parseLedgerEvent, schemaVersionOf, upcastEventData } from "../../src/ledger/events";

/** The upstream attempts on settlement events (C13): a new schema version, older events read as none. */

const recordedV2 = {
  requestId: "request-1",
  keyId: "6f1c1d2e-0b7a-4c55-9d7e-2a0f7c1b9e11",
  account: { kind: "user", id: "alice" },
  userId: "alice",
  organizationId: null,
  model: "gamma-4-5",
  endpoint: "chat.completions",
  streamed: false,
  outcome: "completed",
  tokens: { input: 10, cached: null, output: 5, reasoning: null },
  usageSource: "upstream",
  startedAt: "2026-11-26T00:00:00.000Z",
  heldWon: "3.5",
  pendingWon: "1.25",
};

describe("upstream attempts on settlement events", () => {
  it("are UsageRecorded v3 and UsageVoided v2", () => {
    expect(schemaVersionOf("UsageRecorded")).toBe(3);
    expect(schemaVersionOf("UsageVoided")).toBe(2);
  });

  it("reads older UsageRecorded (v1, v2) and UsageVoided (v1) as having recorded no attempts (and no correction)", () => {
    expect(upcastEventData("UsageRecorded", 2, recordedV2)).toEqual({
      ...recordedV2,
      attempts: null,
      corrects: null,
    });
    const { heldWon: _held, pendingWon: _pending, ...recordedV1 } = recordedV2;
    expect(upcastEventData("UsageRecorded", 1, recordedV1)).toEqual({
      ...recordedV1,
      heldWon: null,
      pendingWon: null,
      attempts: null,
      corrects: null,
    });
    const voidedV1 = {
      requestId: "request-2",
      account: { kind: "user", id: "alice" },
      releasedWon: "3.5",
      reason: "upstream-failed",
    };
    expect(upcastEventData("UsageVoided", 1, voidedV1)).toEqual({ ...voidedV1, attempts: null });
  });

  it("accepts attempts named by endpoint, and refuses an attempt of unknown shape", () => {
    const attempts = [
      { endpoint: "gamma-east", model: "gamma-4-5", status: 503, error: "status", durationMs: 12 },
      { endpoint: "gamma-west", model: "gamma-4-5", status: null, error: "connection", durationMs: 3 },
      { endpoint: "gamma-west", model: "gamma-4-5", status: 200, error: null, durationMs: 40 },
    ];
    const metadata = {
      actor: "key:6f1c1d2e-0b7a-4c55-9d7e-2a0f7c1b9e11",
      occurredAt: "2026-11-26T00:00:01.000Z",
    };
    expect(
      parseLedgerEvent({ type: "UsageRecorded", data: { ...recordedV2, attempts }, metadata }).data,
    ).toMatchObject({ attempts });
    expect(() =>
      parseLedgerEvent({
        type: "UsageRecorded",
        data: { ...recordedV2, attempts: [{ ...attempts[0], error: "exploded" }] },
        metadata,
      }),
    ).toThrow();
  });
});
