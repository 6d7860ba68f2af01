import type pg from "pg";

/** Where redeemed sign-in codes are remembered: `claim` is true for a code's first redemption only. */
export interface RedeemedSignInCodes {
  claim(codeId: string, expiresAt: Date): Promise<boolean>;
}

/** In PostgreSQL (migration 10), so a code signs in once across restarts and gateway processes. */
export class PostgresRedeemedSignInCodes implements RedeemedSignInCodes {
  constructor(private readonly database: Pick<pg.Pool, "query">) {}

  async claim(codeId: string, expiresAt: Date): Promise<boolean> {
    // Sign-ins are rare: sweeping the expired rows on each costs nothing and keeps the table small.
    const result = await this.database.query(
      `WITH swept AS (DELETE FROM console_sign_in_codes_redeemed WHERE expires_at < now())
       INSERT INTO console_sign_in_codes_redeemed (code_id, expires_at) VALUES ($1, $2)
       ON CONFLICT (code_id) DO NOTHING
       RETURNING code_id`,
      [codeId, expiresAt.toISOString()],
    );
    return result.rowCount === 1;
  }
}
