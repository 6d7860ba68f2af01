import { createHash } from "node:crypto";

/**
 * The hash that chains an event to its stream's previous event. PostgreSQL computes it on insert
 * (`ledger_event_hash` and the `ledger_events_chain` trigger, src/ledger/schema/); this is the same function
 * for `ledger verify` and for stores that hash in the appender (EventStoreDB). Any change here is a new
 * version of the chain, never an edit: events already chained keep the bytes they were hashed with.
 *
 * Canonical bytes, in order: the previous hash (32 bytes; 32 zero bytes for a stream's first event, or
 * after an event written before the chain existed), then stream id, stream version (int32), event id
 * (16 bytes), type, schema version (int16), data, metadata. Texts are UTF-8, each preceded by its length
 * in bytes as an int32; every integer is big-endian; data and metadata are the json text exactly as stored.
 */

export const chainHashBytes = 32;
export const genesisHash: Buffer = Buffer.alloc(chainHashBytes);

export interface HashedEventFields {
  streamId: string;
  streamVersion: number;
  eventId: string;
  type: string;
  schemaVersion: number;
  /** The stored json text, byte for byte. */
  dataText: string;
  metadataText: string;
}

export function eventChainHash(previousHash: Buffer, event: HashedEventFields): Buffer {
  if (previousHash.length !== chainHashBytes) throw new RangeError("a previous hash has 32 bytes");
  const hash = createHash("sha256");
  hash.update(previousHash);
  updateText(hash, event.streamId);
  hash.update(int32(event.streamVersion));
  hash.update(uuidBytes(event.eventId));
  updateText(hash, event.type);
  const schemaVersion = Buffer.alloc(2);
  schemaVersion.writeInt16BE(event.schemaVersion);
  hash.update(schemaVersion);
  updateText(hash, event.dataText);
  updateText(hash, event.metadataText);
  return hash.digest();
}

function updateText(hash: ReturnType<typeof createHash>, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  hash.update(int32(bytes.length));
  hash.update(bytes);
}

function int32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(value);
  return bytes;
}

function uuidBytes(uuid: string): Buffer {
  const hex = uuid.replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new RangeError(`not a uuid: ${uuid}`);
  return Buffer.from(hex, "hex");
}
