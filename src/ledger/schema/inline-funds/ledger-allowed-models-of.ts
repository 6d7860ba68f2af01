import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * The allowed models of an `ApiKeyLimitsSet`'s data as an array (key-limits.ts): null when the event names
 * none — JSON null, or a v1 event written before keys could be limited to models. The trigger and the fold
 * both read it through this, so they cannot disagree.
 */
export const ledgerAllowedModelsOfFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_allowed_models_of",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_allowed_models_of(data json) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN json_typeof(data->'allowedModels') = 'array'
                  THEN ARRAY(SELECT json_array_elements_text(data->'allowedModels')) END
    $$;
  `,
};
