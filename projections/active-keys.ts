import {
  defineTable,
  type ProjectionDefinition,
  type ProjectionRows,
} from "../src/ledger/projection/projection";
import type { RecordedEventOf } from "../src/ledger/store/event-store";
import { apiKeyChangeStatements, issuedKeysSelect } from "./api-key-sql-fold";

/** API keys that may authenticate, looked up by the HMAC of the presented key. */

type Row = {
  key_id: string;
  key_hash: string;
  owner_kind: string;
  owner_id: string;
  issued_by_user_id: string;
  status: number;
};

export const activeKeysTable = defineTable<Row>({
  name: "projection_active_keys",
  columns: {
    key_id: "text",
    key_hash: "text",
    owner_kind: "text",
    owner_id: "text",
    issued_by_user_id: "text",
    status: "integer",
  },
  primaryKey: ["key_id"],
  indexes: [
    "CREATE UNIQUE INDEX IF NOT EXISTS projection_active_keys_hash ON projection_active_keys (key_hash) INCLUDE (status, owner_kind, owner_id, key_id)",
  ],
});

type Handled = RecordedEventOf<"ApiKeyIssued" | "ApiKeyStatusChanged" | "ApiKeyDeleted">;

export const activeKeysProjection: ProjectionDefinition = {
  name: "active-keys",
  version: 1,
  handles: new Set(["ApiKeyIssued", "ApiKeyStatusChanged", "ApiKeyDeleted"]),
  tables: [activeKeysTable],
  evolve(rows: ProjectionRows, recorded) {
    const event = recorded as Handled;
    switch (event.type) {
      case "ApiKeyIssued":
        rows.put(activeKeysTable, {
          key_id: event.data.keyId,
          key_hash: event.data.keyHash,
          owner_kind: event.data.owner.kind,
          owner_id: event.data.owner.id,
          issued_by_user_id: event.data.issuedByUserId,
          status: 1,
        });
        return;
      case "ApiKeyStatusChanged": {
        const key = rows.get(activeKeysTable, { key_id: event.data.keyId });
        if (key) rows.put(activeKeysTable, { ...key, status: event.data.status });
        return;
      }
      case "ApiKeyDeleted":
        rows.delete(activeKeysTable, { key_id: event.data.keyId });
        return;
      default: {
        const unreachable: never = event;
        throw new Error(`unhandled ${(unreachable as Handled).type}`);
      }
    }
  },
  sqlFold: {
    keyed: [activeKeysTable],
    statements: (into) => [
      `INSERT INTO ${into(activeKeysTable)} AS stored (key_id, key_hash, owner_kind, owner_id, issued_by_user_id, status)
       ${issuedKeysSelect("key_id, key_hash, owner_kind, owner_id, issued_by_user_id, 1")}
       ON CONFLICT (key_id) DO UPDATE SET key_hash = excluded.key_hash, owner_kind = excluded.owner_kind,
         owner_id = excluded.owner_id, issued_by_user_id = excluded.issued_by_user_id, status = excluded.status`,
      ...apiKeyChangeStatements(activeKeysTable, into),
    ],
  },
};
