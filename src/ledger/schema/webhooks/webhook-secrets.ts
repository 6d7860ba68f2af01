import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Each webhook endpoint's signing secret (`whsec_…`, Standard Webhooks), kept out of the log: the log is read
 * by the admin API and never forgets, and a signing secret must be usable (it signs), so it is stored as it
 * is, not hashed. Deleted with its endpoint.
 */
export const webhookSecretsTable: DeclaredTable = {
  kind: "table",
  name: "webhook_secrets",
  sql: `
    CREATE TABLE webhook_secrets (
      webhook_id text PRIMARY KEY,
      secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
