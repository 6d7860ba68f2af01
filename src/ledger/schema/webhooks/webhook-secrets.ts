import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Each webhook endpoint's signing secret (`whsec_…`, Standard Webhooks), kept out of the log: the log is read
 * by the admin API and never forgets, and a signing secret must be usable (it signs), so it is stored as it
 * is, not hashed. Deleted with its endpoint.
 *
 * A rotation (migration 26) moves `secret` to `previous_secret`, which signs beside it until
 * `previous_secret_valid_until`, and writes the new one. `secret_version` is the endpoint stream's version
 * of the event that set `secret` (0: its addition; else its `WebhookSecretRotated`), so rotations land here
 * in the log's order whichever process writes them.
 */
export const webhookSecretsTable: DeclaredTable = {
  kind: "table",
  name: "webhook_secrets",
  sql: `
    CREATE TABLE webhook_secrets (
      webhook_id text PRIMARY KEY,
      secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      secret_version integer NOT NULL DEFAULT 0,
      previous_secret text,
      previous_secret_valid_until timestamptz
    );
  `,
};
