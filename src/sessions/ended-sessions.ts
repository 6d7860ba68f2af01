import { createHash } from "node:crypto";
import type pg from "pg";

/**
 * Sessions ended before their token's expiry: a console sign-out. A session token (and the admin console's
 * cookie) is a signed claim that needs no row to be valid, so ending one is a row saying it ended, written by
 * whichever gateway process signed it out and read by every one. A row names its token by SHA-256, never the
 * token itself, and lives as long as the token could still be presented: until the token's own `exp`.
 */
export interface EndedSessions {
  /** Records that the token of `tokenDigest` ended; `expiresAt` is the token's own expiry. */
  end(tokenDigest: Buffer, expiresAt: Date): Promise<void>;
  /** Whether the token of `tokenDigest` was ended. Asked only of a token whose signature and expiry hold. */
  isEnded(tokenDigest: Buffer): Promise<boolean>;
}

/** What an ended session is known by: the SHA-256 of its token (32 bytes). */
export function endedSessionDigestOf(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/** In PostgreSQL (migration 29), so that a sign-out holds across restarts and every gateway process. */
export class PostgresEndedSessions implements EndedSessions {
  constructor(private readonly database: Pick<pg.Pool, "query">) {}

  async end(tokenDigest: Buffer, expiresAt: Date): Promise<void> {
    // Sign-outs are rare beside requests: each sweeps the rows whose token expired (by the index), so the
    // table holds only sessions that a copy of their token could still open.
    await this.database.query(
      `WITH swept AS (DELETE FROM ended_sessions WHERE expires_at < now())
       INSERT INTO ended_sessions (token_sha256, expires_at) VALUES ($1, $2)
       ON CONFLICT (token_sha256) DO NOTHING`,
      [tokenDigest, expiresAt.toISOString()],
    );
  }

  async isEnded(tokenDigest: Buffer): Promise<boolean> {
    // One probe of the primary key; a row whose token expired may still be there, and is no matter: the
    // token's own exp refuses it before this is asked.
    const result = await this.database.query("SELECT 1 FROM ended_sessions WHERE token_sha256 = $1", [
      tokenDigest,
    ]);
    return result.rowCount !== null && result.rowCount > 0;
  }
}
