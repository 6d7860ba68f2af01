import type { Migration } from "../migration";

/**
 * A sign-out ends the session on every gateway process, not only the browser's cookie: the sessions ended
 * before their token's expiry, by the token's SHA-256 (as declared). New table only.
 */
export const endedSessionsMigration: Migration = {
  id: 29,
  name: "sessions signed out before their token's expiry",
  sql: `
    CREATE TABLE ended_sessions (
      token_sha256 bytea PRIMARY KEY CHECK (octet_length(token_sha256) = 32),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX ended_sessions_expires_at ON ended_sessions (expires_at);
  `,
};
