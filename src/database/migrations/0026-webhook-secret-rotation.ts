import type { Migration } from "../migration";

/**
 * A webhook endpoint's secret may be rotated (`POST /llm/webhooks/{id}/secret`): the secret it replaced
 * signs beside the new one for a day. Existing secrets are their endpoint's first (version 0).
 */
export const webhookSecretRotationMigration: Migration = {
  id: 26,
  name: "webhook secrets keep the one a rotation replaced",
  sql: `
    ALTER TABLE webhook_secrets
      ADD COLUMN secret_version integer NOT NULL DEFAULT 0,
      ADD COLUMN previous_secret text,
      ADD COLUMN previous_secret_valid_until timestamptz;
  `,
};
