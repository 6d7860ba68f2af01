import type { Migration } from "../migration";

/**
 * The models a key may call (`ApiKeyLimitsSet` v2's `allowedModels`), kept beside its other limits by the
 * append trigger (src/ledger/schema/inline-funds/key-limits.ts). No event written before carries any, so the
 * new column starts null (every model) on every existing row and nothing is folded again.
 */
export const keyAllowedModelsMigration: Migration = {
  id: 14,
  name: "a key's allowed models beside its limits",
  sql: "ALTER TABLE key_limits ADD COLUMN allowed_models text[];",
};
