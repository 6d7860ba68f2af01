import { createRequire } from "node:module";
import {
  type RecordedEvent as EsdbRecordedEvent,
  WrongExpectedVersionError as EsdbWrongExpectedVersionError,
  NO_STREAM,
  type Position,
  START,
} from "@eventstore/db-client";
import { describe, expect, it } from "vitest";
import { AssertionError } from "../../../src/kernel/assert";
import { genesisHash } from "../../../src/ledger/integrity/event-hash";
import { IdempotencyConflictError } from "../../../src/ledger/store/event-store";
import {
  actualVersionOf,
  isLedgerRecord,
  storedAppendOf,
  streamHeadOf,
  toExpectedRevision,
  toLogPosition,
  toReadPosition,
  toRecordedEvent,
  toStreamVersion,
} from "../../../src/ledger/store/eventstoredb-mapping";
import { logStart } from "../../../src/ledger/store/log-position";
import { metadata, topUp } from "../../support/ledger-fixtures";

/**
 * The conversions between `@eventstore/db-client` and the event-store contract, on the client's own
 * values: its constants, its error instances, its request message. No server.
 */

interface PositionMessage {
  setCommitPosition(value: string): PositionMessage;
  setPreparePosition(value: string): PositionMessage;
  serializeBinary(): Uint8Array;
}
/** The message the client sends a $all read's start in (`ReadReq.Options.Position`). */
const { ReadReq } = createRequire(import.meta.url)("@eventstore/db-client/generated/streams_pb") as {
  ReadReq: {
    Options: {
      Position: (new () => PositionMessage) & {
        deserializeBinary(bytes: Uint8Array): { getCommitPosition(): string; getPreparePosition(): string };
      };
    };
  };
};

/** A position through the client's own request message, as `readAll` sends it. */
function sentAndReceived(position: Position): Position {
  const message = new ReadReq.Options.Position()
    .setCommitPosition(position.commit.toString(10))
    .setPreparePosition(position.prepare.toString(10));
  const received = ReadReq.Options.Position.deserializeBinary(message.serializeBinary());
  return { commit: BigInt(received.getCommitPosition()), prepare: BigInt(received.getPreparePosition()) };
}

const above2To53 = 2n ** 53n + 1n;
const unknownPart = 2n ** 64n - 1n;

function recorded(overrides: Partial<EsdbRecordedEvent> & { metadata?: unknown } = {}): EsdbRecordedEvent {
  const { event } = topUp("u1", "10", "ref");
  return {
    streamId: "account-u1",
    id: "7c4f0f9e-2d1e-4b8a-9a57-0c1d2e3f4a5b",
    isJson: true,
    revision: 0n,
    type: event.type,
    created: new Date("2026-11-20T03:00:00.000Z"),
    data: event.data,
    metadata: { ...metadata(), schemaVersion: 1, chainHash: "ab".repeat(32) },
    position: { commit: above2To53, prepare: above2To53 },
    ...overrides,
  } as EsdbRecordedEvent;
}

describe("positions between the client and the contract", () => {
  it("starts a read at START for the log's start, which the client's request cannot carry as −1/−1", () => {
    expect(toReadPosition(undefined)).toBe(START);
    expect(toReadPosition(logStart)).toBe(START);
    expect(() => sentAndReceived({ commit: -1n, prepare: -1n })).toThrow();
  });

  it("sends a position above 2^53 exactly, and refuses one with a negative prepare part", () => {
    const position = { commit: 2n ** 62n + 3n, prepare: 2n ** 62n + 1n };
    expect(sentAndReceived(toReadPosition(position) as Position)).toEqual(position);
    expect(() => toReadPosition({ commit: 5n, prepare: -1n })).toThrow(RangeError);
  });

  it("keeps a recorded position exactly, and refuses none or ulong.MaxValue (a stream read before 22.6)", () => {
    expect(toLogPosition({ commit: above2To53, prepare: above2To53 - 1n }, "e")).toEqual({
      commit: above2To53,
      prepare: above2To53 - 1n,
    });
    expect(() => toLogPosition(undefined, "e")).toThrow(/22\.6/);
    expect(() => toLogPosition({ commit: unknownPart, prepare: unknownPart }, "e")).toThrow(/22\.6/);
  });
});

describe("revisions between the client and the contract", () => {
  it("converts a revision only where a number holds it exactly", () => {
    expect(toStreamVersion(2n ** 53n - 1n)).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => toStreamVersion(2n ** 53n)).toThrow(RangeError);
    expect(() => toStreamVersion(-1n)).toThrow(RangeError);
  });

  it("expects NO_STREAM of an empty head and the head's revision otherwise", () => {
    expect(toExpectedRevision(-1)).toBe(NO_STREAM);
    expect(toExpectedRevision(41)).toBe(41n);
    expect(() => toExpectedRevision(1.5)).toThrow(AssertionError);
  });

  it("reads the stream's version off the client's WrongExpectedVersionError, no_stream as −1", () => {
    const conflict = (current: bigint | typeof NO_STREAM) =>
      new EsdbWrongExpectedVersionError(undefined, { streamName: "account-u1", expected: 3n, current });
    expect(actualVersionOf(conflict(NO_STREAM))).toBe(-1);
    // The client's conflict built from a gRPC error's metadata reads its "actual-version" −1 as a bigint.
    expect(actualVersionOf(conflict(-1n))).toBe(-1);
    expect(actualVersionOf(conflict(7n))).toBe(7);
    expect(() => actualVersionOf(conflict(above2To53))).toThrow(RangeError);
  });
});

describe("recorded events", () => {
  it("takes an event of a type this release does not know for the ledger's when this store wrote it, and refuses it by name", () => {
    const later = recorded({ type: "CreditRefunded", streamId: "account-user-u1" });
    expect(isLedgerRecord(later)).toBe(true);
    expect(() => toRecordedEvent(later)).toThrow(
      /^CreditRefunded in account-user-u1 \(event 7c4f0f9e-[0-9a-f-]+\) cannot be read by this release/,
    );
  });

  it("passes over the server's own records and other applications' events, which this store did not write", () => {
    expect(isLedgerRecord(recorded({ streamId: "$stats-127.0.0.1:2113", type: "$statsCollected" }))).toBe(
      false,
    );
    expect(isLedgerRecord(recorded({ streamId: "$ce-account", type: "$>", isJson: false }))).toBe(false);
    expect(isLedgerRecord(recorded({ streamId: "order-42", type: "OrderPlaced", metadata: undefined }))).toBe(
      false,
    );
    expect(
      isLedgerRecord(
        recorded({ streamId: "order-42", type: "OrderPlaced", metadata: { schemaVersion: "2" } }),
      ),
    ).toBe(false);
  });

  it("gives the ledger's metadata without the store's own fields", () => {
    const event = toRecordedEvent(recorded({ revision: 4n }));
    expect(event.metadata).toEqual(metadata());
    expect(event.streamVersion).toBe(4);
    expect(event.position).toEqual({ commit: above2To53, prepare: above2To53 });
  });

  it("refuses an event this store did not write: binary, or without a schema version", () => {
    expect(() => toRecordedEvent(recorded({ isJson: false, metadata: new Uint8Array() } as never))).toThrow(
      /JSON/,
    );
    expect(() => toRecordedEvent(recorded({ metadata: metadata() }))).toThrow(/schema version/);
  });

  it("chains the next event to the head's hash, to zeros for no head or one from before the chain", () => {
    expect(streamHeadOf(undefined)).toEqual({ version: -1, chainHash: genesisHash });
    expect(streamHeadOf(recorded({ revision: 2n, metadata: { ...metadata(), schemaVersion: 1 } }))).toEqual({
      version: 2,
      chainHash: genesisHash,
    });
    expect(streamHeadOf(recorded({ revision: 2n })).chainHash.toString("hex")).toBe("ab".repeat(32));
    expect(() =>
      streamHeadOf(recorded({ metadata: { ...metadata(), schemaVersion: 1, chainHash: "zz" } })),
    ).toThrow(/malformed/);
  });
});

describe("an append whose event ids are stored", () => {
  const first = topUp("u1", "1", "a", "0b5c7a3e-1f2d-4c6b-8a9e-1d2c3b4a5f6e");
  const second = topUp("u1", "2", "b", "1c6d8b4f-2a3e-4d7c-9baf-2e3d4c5b6a7f");
  const stream = [
    recorded({ id: first.eventId, revision: 0n, position: { commit: 10n, prepare: 10n } }),
    recorded({ id: second.eventId, revision: 1n, position: { commit: 20n, prepare: 20n } }),
  ];
  const append = (events: (typeof first)[]) => ({ streamId: "account-u1", expectedVersion: 0, events });

  it("is the stored append when every id is stored, found whatever case the ids were sent in", () => {
    const upper = { ...second, eventId: second.eventId.toUpperCase() };
    expect(storedAppendOf(append([first, upper]), stream)).toEqual({
      streamId: "account-u1",
      streamVersion: 1,
      position: { commit: 20n, prepare: 20n },
    });
    expect(storedAppendOf(append([topUp("u1", "3", "c")]), stream)).toBeUndefined();
  });

  it("is an idempotency conflict when only some ids are stored", () => {
    expect(() => storedAppendOf(append([first, topUp("u1", "3", "c")]), stream)).toThrow(
      IdempotencyConflictError,
    );
  });
});
