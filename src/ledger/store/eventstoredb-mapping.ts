import {
  type AppendExpectedRevision,
  type RecordedEvent as EsdbRecordedEvent,
  type WrongExpectedVersionError as EsdbWrongExpectedVersionError,
  NO_STREAM,
  type Position,
  type ReadPosition,
  START,
} from "@eventstore/db-client";
import { assert } from "../../kernel/assert";
import { type EventMetadata, isLedgerEventType, upcastEventData } from "../events";
import { chainHashBytes, genesisHash } from "../integrity/event-hash";
import {
  type AppendResult,
  IdempotencyConflictError,
  type RecordedEvent,
  type StreamAppend,
} from "./event-store";
import type { LogPosition } from "./log-position";

/**
 * Between `@eventstore/db-client` (6.x) and the event-store contract: positions, revisions, expected
 * revisions, recorded events and the client's conflict error. The client counts positions and revisions in
 * unsigned 64-bit bigints; the contract keeps positions as bigints and versions as numbers, so a revision
 * converts only where it is exact.
 */

/**
 * What a server before 22.6 gives as the log position of an event read from a stream (not from $all):
 * ulong.MaxValue, which the client passes on as is. Such a "position" is no place in the log.
 */
const unknownPositionPart = 2n ** 64n - 1n;

/**
 * Where a forward read or subscription of $all starts, for the contract's exclusive `after`. The log's
 * start (`logStart`, −1/−1) and any position before the first record are START: the client cannot send a
 * negative position at all (its request fails to serialise). A position at or after a record is sent as
 * is; the caller drops what is not after `after`, since a read of $all includes the record at its start.
 */
export function toReadPosition(after: LogPosition | undefined): ReadPosition {
  if (after === undefined || after.commit < 0n) return START;
  if (after.prepare < 0n) {
    throw new RangeError(`not an EventStoreDB log position: ${after.commit}/${after.prepare}`);
  }
  return { commit: after.commit, prepare: after.prepare };
}

/** The client's position of a recorded event or an append, which the contract needs for every event. */
export function toLogPosition(position: Position | undefined, what: string): LogPosition {
  if (
    position === undefined ||
    position.commit === unknownPositionPart ||
    position.prepare === unknownPositionPart
  ) {
    throw new Error(
      `EventStoreDB gave no log position for ${what}: the store needs a server of version 22.6 or later, which gives one for events read from a stream`,
    );
  }
  return { commit: position.commit, prepare: position.prepare };
}

/** A stream revision as the contract's version: exact, or refused (a number is exact up to 2^53 − 1). */
export function toStreamVersion(revision: bigint): number {
  const version = Number(revision);
  if (revision < 0n || !Number.isSafeInteger(version)) {
    throw new RangeError(`stream revision ${revision} is beyond the versions this store can count exactly`);
  }
  return version;
}

/** The revision an append expects, from the head the appender read (−1: the stream has no event). */
export function toExpectedRevision(headVersion: number): AppendExpectedRevision {
  if (headVersion === -1) return NO_STREAM;
  assert(Number.isSafeInteger(headVersion) && headVersion >= 0, "a stream head is -1 or a version");
  return BigInt(headVersion);
}

/**
 * The stream's version as the client's conflict reports it: `no_stream` is −1, as in the contract. A conflict
 * the client builds from a gRPC error's metadata says no stream as the server's −1, a bigint.
 */
export function actualVersionOf(error: EsdbWrongExpectedVersionError): number {
  const actual = error.actualVersion;
  return actual === NO_STREAM || actual === -1n ? -1 : toStreamVersion(actual);
}

/**
 * An event this store reads back, outside the server's own `$` streams: a type of the catalog, or any event
 * whose metadata carries the schema version this store writes beside the ledger's own. A server may hold
 * other applications' streams and always holds its own system events; both are passed over. A type this
 * release does not know, written by this store (a later release's), is the ledger's all the same, so that
 * reading it is refused (`toRecordedEvent`) rather than the log folded without it, as PostgreSQL refuses it.
 */
export function isLedgerRecord(event: EsdbRecordedEvent): boolean {
  if (event.streamId.startsWith("$")) return false;
  return isLedgerEventType(event.type) || carriesStoreSchemaVersion(event);
}

function carriesStoreSchemaVersion(event: EsdbRecordedEvent): boolean {
  const metadata = event.metadata as StoredLedgerMetadata | undefined;
  return (
    event.isJson &&
    typeof metadata === "object" &&
    metadata !== null &&
    !Array.isArray(metadata) &&
    Number.isInteger(metadata.schemaVersion)
  );
}

interface StoredLedgerMetadata {
  schemaVersion?: unknown;
  chainHash?: unknown;
}

/** The store's fields in an event's metadata (the schema version and chain hash), beside the ledger's own. */
function storeMetadataOf(event: EsdbRecordedEvent): StoredLedgerMetadata & Record<string, unknown> {
  const metadata = event.metadata;
  if (!event.isJson || typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    throw new Error(
      `event ${event.id} of ${event.streamId} was not written by this store (no JSON metadata)`,
    );
  }
  return metadata as StoredLedgerMetadata & Record<string, unknown>;
}

export function toRecordedEvent(event: EsdbRecordedEvent): RecordedEvent {
  if (!isLedgerEventType(event.type)) {
    throw new Error(
      `${event.type} in ${event.streamId} (event ${event.id}) cannot be read by this release: its catalog has no such event type`,
    );
  }
  const { schemaVersion, chainHash: _chainHash, ...metadata } = storeMetadataOf(event);
  if (typeof schemaVersion !== "number" || !Number.isInteger(schemaVersion)) {
    throw new Error(`event ${event.id} of ${event.streamId} carries no schema version in its metadata`);
  }
  return {
    type: event.type,
    data: upcastEventData(event.type, schemaVersion, event.data),
    metadata: metadata as EventMetadata,
    eventId: event.id,
    streamId: event.streamId,
    streamVersion: toStreamVersion(event.revision),
    position: toLogPosition(event.position, `event ${event.id} of ${event.streamId}`),
    recordedAt: event.created,
  } as RecordedEvent;
}

export interface StreamHead {
  /** The last event's version; −1 when the stream has none. */
  version: number;
  /** The hash the next event chains to. */
  chainHash: Buffer;
}

export function streamHeadOf(last: EsdbRecordedEvent | undefined): StreamHead {
  if (last === undefined) return { version: -1, chainHash: genesisHash };
  const stored = storeMetadataOf(last).chainHash;
  // An event written before the chain existed: the next one starts it, as in PostgreSQL.
  if (stored === undefined) return { version: toStreamVersion(last.revision), chainHash: genesisHash };
  if (typeof stored !== "string" || !new RegExp(`^[0-9a-f]{${chainHashBytes * 2}}$`).test(stored)) {
    throw new Error(`event ${last.id} of ${last.streamId} carries a malformed chain hash`);
  }
  return { version: toStreamVersion(last.revision), chainHash: Buffer.from(stored, "hex") };
}

/**
 * The result of an append whose event ids are in the stream already, as PostgreSQL's unique event id
 * answers it: every id stored → that append, returned as stored; some → IdempotencyConflictError; none →
 * undefined. The server writes ids in lower case, whatever case they were sent in.
 */
export function storedAppendOf(
  append: StreamAppend,
  streamEvents: readonly EsdbRecordedEvent[],
): AppendResult | undefined {
  const wanted = new Set(append.events.map((entry) => entry.eventId.toLowerCase()));
  const stored = streamEvents.filter((event) => wanted.has(event.id.toLowerCase()));
  if (stored.length === 0) return undefined;
  if (stored.length !== append.events.length) throw new IdempotencyConflictError(append.streamId);
  const last = stored.reduce((latest, event) => (event.revision > latest.revision ? event : latest));
  return {
    streamId: append.streamId,
    streamVersion: toStreamVersion(last.revision),
    position: toLogPosition(last.position, `event ${last.id} of ${append.streamId}`),
  };
}
