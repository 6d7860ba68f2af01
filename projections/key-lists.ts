import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import type { RecordedEventOf } from "../src/ledger/store/event-store";
import { apiKeyChangeStatements, issuedKeysSelect } from "./api-key-sql-fold";

/**
 * Every key that is not deleted, per owner, for the key-management list; and every key ever issued with its
 * name, deleted or not, so statements, usage and CSVs name a key beside its id long after it is gone (a
 * replaced playground key included). Keys are never renamed: the name a key was issued with is its last.
 */

type Row = {
  key_id: string;
  owner_kind: string;
  owner_id: string;
  name: string;
  description: string;
  status: number;
  key_preview: string;
  created_at: string;
};

export const keyListsTable = defineTable<Row>({
  name: "projection_key_lists",
  columns: {
    key_id: "text",
    owner_kind: "text",
    owner_id: "text",
    name: "text",
    description: "text",
    status: "integer",
    key_preview: "text",
    created_at: "timestamptz",
  },
  primaryKey: ["key_id"],
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_key_lists_owner ON projection_key_lists (owner_kind, owner_id, created_at DESC)",
  ],
});

type NameRow = { key_id: string; owner_kind: string; owner_id: string; name: string };

export const keyNamesTable = defineTable<NameRow>({
  name: "projection_key_names",
  columns: { key_id: "text", owner_kind: "text", owner_id: "text", name: "text" },
  primaryKey: ["key_id"],
});

type Handled = RecordedEventOf<"ApiKeyIssued" | "ApiKeyStatusChanged" | "ApiKeyDeleted">;

export const keyListsProjection: ProjectionDefinition = {
  name: "key-lists",
  // 2: the key names table, kept through deletion.
  version: 2,
  handles: new Set(["ApiKeyIssued", "ApiKeyStatusChanged", "ApiKeyDeleted"]),
  tables: [keyListsTable, keyNamesTable],
  evolve(rows, recorded) {
    const event = recorded as Handled;
    switch (event.type) {
      case "ApiKeyIssued":
        rows.put(keyListsTable, {
          key_id: event.data.keyId,
          owner_kind: event.data.owner.kind,
          owner_id: event.data.owner.id,
          name: event.data.name,
          description: event.data.description,
          status: 1,
          key_preview: event.data.keyPreview,
          created_at: event.metadata.occurredAt,
        });
        rows.put(keyNamesTable, {
          key_id: event.data.keyId,
          owner_kind: event.data.owner.kind,
          owner_id: event.data.owner.id,
          name: event.data.name,
        });
        return;
      case "ApiKeyStatusChanged": {
        const key = rows.get(keyListsTable, { key_id: event.data.keyId });
        if (key) rows.put(keyListsTable, { ...key, status: event.data.status });
        return;
      }
      case "ApiKeyDeleted":
        rows.delete(keyListsTable, { key_id: event.data.keyId });
        return;
      default: {
        const unreachable: never = event;
        throw new Error(`unhandled ${(unreachable as Handled).type}`);
      }
    }
  },
  // The tables in their order, the order a rebuild's swap locks them in (a live batch never waits on it
  // holding one it wants).
  sqlFold: {
    keyed: [keyListsTable, keyNamesTable],
    statements: (into) => [
      `INSERT INTO ${into(keyListsTable)} AS stored (key_id, owner_kind, owner_id, name, description, status,
         key_preview, created_at)
       ${issuedKeysSelect("key_id, owner_kind, owner_id, name, description, 1, key_preview, occurred_at")}
       ON CONFLICT (key_id) DO UPDATE SET owner_kind = excluded.owner_kind, owner_id = excluded.owner_id,
         name = excluded.name, description = excluded.description, status = excluded.status,
         key_preview = excluded.key_preview, created_at = excluded.created_at`,
      ...apiKeyChangeStatements(keyListsTable, into),
      `INSERT INTO ${into(keyNamesTable)} AS stored (key_id, owner_kind, owner_id, name)
       ${issuedKeysSelect("key_id, owner_kind, owner_id, name")}
       ON CONFLICT (key_id) DO UPDATE SET owner_kind = excluded.owner_kind, owner_id = excluded.owner_id,
         name = excluded.name`,
    ],
  },
};
