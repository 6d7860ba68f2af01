import type pg from "pg";

/**
 * A rotation's write of `webhook_secrets` (src/ledger/schema/webhooks/webhook-secrets.ts): the new secret in
 * force, the one it replaced kept to sign beside it until `previousValidUntil`. `version` is the stream
 * version of the rotation's event; the row takes it only over an older one, so two rotations of one endpoint
 * by two processes leave the secret of the later event in force, whichever wrote first.
 */
export async function replaceWebhookSecret(
  database: Pick<pg.Pool, "query">,
  webhookId: string,
  replacement: { secret: string; version: number; previousValidUntil: Date },
): Promise<"replaced" | "superseded" | "gone"> {
  const result = await database.query<{ replaced: boolean; found: boolean }>(
    `WITH replaced AS (
       UPDATE webhook_secrets SET previous_secret = secret, previous_secret_valid_until = $4,
         secret = $2, secret_version = $3
       WHERE webhook_id = $1 AND secret_version < $3
       RETURNING 1)
     SELECT EXISTS (SELECT FROM replaced) AS replaced,
       EXISTS (SELECT FROM webhook_secrets WHERE webhook_id = $1) AS found`,
    [webhookId, replacement.secret, replacement.version, replacement.previousValidUntil],
  );
  const row = result.rows[0]!;
  if (row.replaced) return "replaced";
  return row.found ? "superseded" : "gone";
}
