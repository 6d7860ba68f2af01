import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * The console's one-time sign-in codes already redeemed, so a code signs in once even across restarts and
 * across gateway processes. A code is a signed claim (it needs no row to exist); its row is written when it
 * is redeemed, and the primary key makes the first redemption the only one. Rows past their code's expiry
 * are useless and swept as codes are redeemed.
 */
export const consoleSignInCodesRedeemedTable: DeclaredTable = {
  kind: "table",
  name: "console_sign_in_codes_redeemed",
  sql: `
    CREATE TABLE console_sign_in_codes_redeemed (
      code_id uuid PRIMARY KEY,
      expires_at timestamptz NOT NULL
    );
  `,
};
