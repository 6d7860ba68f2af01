import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Sessions signed out before their token's expiry (src/sessions/ended-sessions.ts): user session tokens and
 * the admin console's cookies, each by the SHA-256 of its token, never the token. A token is a signed claim
 * that needs no row to be valid; its row here, read wherever such a token is accepted, ends it on every
 * gateway process. Rows past their token's expiry are useless and swept as sessions are signed out.
 */
export const endedSessionsTable: DeclaredTable = {
  kind: "table",
  name: "ended_sessions",
  sql: `
    CREATE TABLE ended_sessions (
      token_sha256 bytea PRIMARY KEY CHECK (octet_length(token_sha256) = 32),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX ended_sessions_expires_at ON ended_sessions (expires_at);
  `,
};
