import type { Pool } from "pg";
import { Money } from "../../billing/money";
import { type ApiKeyHasher, looksLikeApiKey } from "../../keys/api-key-secret";
import type { AccountReference } from "../../ledger/events";
import { apiErrors } from "../api-error";
import { bearerTokenOfHeader } from "../middleware/authenticate-session";

/**
 * Admission of a generation request: the key is looked up by its HMAC and the balance it draws on is read
 * in the same query — one round trip, no upstream call. A balance below ₩1 before the request blocks it.
 */

export interface Caller {
  keyId: string;
  /** The balance this request is charged to: the organization's for organization keys. */
  account: AccountReference;
  userId: string | null;
  organizationId: string | null;
}

const minimumBalanceWon = new Money(1);

interface AdmissionRow {
  key_id: string;
  key_hash: string;
  owner_kind: "user" | "organization";
  owner_id: string;
  issued_by_user_id: string;
  balance_won: string | null;
}

export class ApiKeyAdmission {
  constructor(
    private readonly pool: Pick<Pool, "query">,
    private readonly hasher: ApiKeyHasher,
  ) {}

  /** For generation: a valid key whose balance is at least ₩1. */
  async admit(authorizationHeader: string | undefined): Promise<Caller> {
    return this.authenticate(authorizationHeader, { requireCredit: true });
  }

  async authenticate(
    authorizationHeader: string | undefined,
    options: { requireCredit: boolean },
  ): Promise<Caller> {
    const presented = bearerTokenOfHeader(authorizationHeader);
    if (!presented || !looksLikeApiKey(presented)) throw apiErrors.unauthorized();
    const keyHash = this.hasher.hash(presented);
    const result = await this.pool.query<AdmissionRow>({
      name: "admit-api-key",
      text: `SELECT keys.key_id, keys.key_hash, keys.owner_kind, keys.owner_id, keys.issued_by_user_id, balances.balance_won
             FROM projection_active_keys keys
             LEFT JOIN projection_balances balances
               ON balances.account_kind = keys.owner_kind AND balances.account_id = keys.owner_id
             WHERE keys.key_hash = $1 AND keys.status = 1`,
      values: [keyHash],
    });
    const row = result.rows[0];
    if (!row || !this.hasher.matches(row.key_hash, keyHash)) throw apiErrors.unauthorized();
    if (options.requireCredit && new Money(row.balance_won ?? "0").lessThan(minimumBalanceWon))
      throw apiErrors.creditInsufficient(row.owner_kind);
    const isOrganizationKey = row.owner_kind === "organization";
    return {
      keyId: row.key_id,
      account: { kind: row.owner_kind, id: row.owner_id },
      userId: isOrganizationKey ? row.issued_by_user_id : row.owner_id,
      organizationId: isOrganizationKey ? row.owner_id : null,
    };
  }
}
