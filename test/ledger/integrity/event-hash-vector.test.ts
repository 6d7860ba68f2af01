import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventChainHash, type HashedEventFields } from "../../../src/ledger/integrity/event-hash";
import { createTestDatabase, type TestDatabase } from "../../support/database";

/**
 * A fixed vector of the chain hash. It pins the chain's bytes: every stored chain and every checkpoint's
 * leaves were hashed with them, so a change to what is hashed (a field left out, reordered, encoded
 * otherwise) must change this vector deliberately — as a new version of the chain, since it breaks every
 * stored one. Agreeing with each other is not enough: the SQL and the TypeScript could change together.
 */

// Not the genesis hash, so the previous link's bytes count; texts in Korean, so lengths are in bytes.
const previousHash = Buffer.from(Array.from({ length: 32 }, (_, index) => index));
const fixedEvent: HashedEventFields = {
  streamId: "account-user-유나",
  streamVersion: 3,
  eventId: "0f8e2c4a-6b1d-4e3f-9a57-1c2b3d4e5f60",
  type: "CreditToppedUp",
  schemaVersion: 1,
  dataText: '{"account":{"kind":"user","id":"유나"},"amountWon":"1000","reference":"충전 ₩1,000"}',
  metadataText: '{"actor": "admin", "occurredAt": "2026-11-20T03:00:00.000Z"}',
};
const fixedEventHashHex = "ceeb3a860e087296104b3fea50f2f79395b32fe7b71605b79d618cd7fbf52150";

let database: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase("event_hash_vector", { migrated: true });
  pool = new pg.Pool({ connectionString: database.url, max: 1 });
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

describe("the chain hash of one fixed event", () => {
  it("is the pinned value in TypeScript (verify, EventStoreDB) and in SQL (ledger_event_hash)", async () => {
    // When
    const inTypeScript = eventChainHash(previousHash, fixedEvent).toString("hex");
    const inSql = await pool.query<{ hash: string }>(
      `SELECT encode(ledger_event_hash($1::bytea, $2, $3, $4::uuid, $5, $6::smallint, $7::json, $8::json),
         'hex') AS hash`,
      [
        previousHash,
        fixedEvent.streamId,
        fixedEvent.streamVersion,
        fixedEvent.eventId,
        fixedEvent.type,
        fixedEvent.schemaVersion,
        fixedEvent.dataText,
        fixedEvent.metadataText,
      ],
    );

    // Then
    expect(inTypeScript).toBe(fixedEventHashHex);
    expect(inSql.rows[0]!.hash).toBe(fixedEventHashHex);
  });
});
