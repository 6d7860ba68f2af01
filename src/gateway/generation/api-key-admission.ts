import type { AllowedModels } from "../../keys/allowed-models";
import { type ApiKeyHasher, looksLikeApiKey } from "../../keys/api-key-secret";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, invalidApiKeyMessages, missingApiKeyMessage } from "../api-error";
import { bearerTokenOfHeader } from "../middleware/authenticate-session";
import type { AdmissionRecord } from "./admission-read-model";

/**
 * Admission of a generation request: the key is looked up by its HMAC, with the balance it draws on, in
 * this process's admission cache — no upstream call, and no database round trip once the key is cached.
 * A balance below ₩1 before the request blocks it.
 */

export interface Caller {
  keyId: string;
  /** The balance this request is charged to: the organization's for organization keys. */
  account: AccountReference;
  userId: string | null;
  organizationId: string | null;
  /** What the account had available when this process last read it (the hold decides, not this). */
  availableWon: string;
  /** The slugs and family words the key may call (C14); null: every model. */
  allowedModels: AllowedModels;
  /** Whether the key has a spend or rate limit (C13), as this process last read it. */
  hasSpendOrRateLimit: boolean;
}

export class ApiKeyAdmission {
  constructor(
    private readonly admissionRecords: {
      find(keyHash: string): Promise<AdmissionRecord | undefined>;
      findFresh(keyHash: string): Promise<AdmissionRecord | undefined>;
    },
    private readonly hasher: ApiKeyHasher,
    /** Tells the admin token apart, so that sending it here is answered as that mistake. */
    private readonly isAdminToken: (presented: string) => boolean = () => false,
  ) {}

  private notKeyMessageOf(presented: string): string {
    if (this.isAdminToken(presented)) return invalidApiKeyMessages.adminToken;
    if (presented.startsWith("sk-")) return invalidApiKeyMessages.otherProvider;
    // Our prefix with a wrong length or character: a key mistyped or cut short.
    if (presented.startsWith("svc_")) return invalidApiKeyMessages.unknown;
    return invalidApiKeyMessages.notKeyShaped;
  }

  /** For generation: a valid key whose balance is at least ₩1. */
  async admit(authorizationHeader: string | undefined): Promise<Caller> {
    return this.authenticate(authorizationHeader, { requireCredit: true });
  }

  /**
   * `fresh`: the key as the projections hold it now, not as this process's copy last read it — for a read
   * no hold checks after it (the model list), so that a key changed through another process is answered as
   * changed at once (C4). A generation request's hold checks the key itself (ledger-authorize-usage.ts).
   */
  async authenticate(
    authorizationHeader: string | undefined,
    options: { requireCredit: boolean; fresh?: boolean },
  ): Promise<Caller> {
    if (authorizationHeader === undefined) throw apiErrors.unauthorized(missingApiKeyMessage);
    const presented = bearerTokenOfHeader(authorizationHeader);
    if (!presented) throw apiErrors.unauthorized(notBearerMessageOf(authorizationHeader));
    if (!looksLikeApiKey(presented)) throw apiErrors.unauthorized(this.notKeyMessageOf(presented));
    const keyHash = this.hasher.hash(presented);
    const record = await (options.fresh
      ? this.admissionRecords.findFresh(keyHash)
      : this.admissionRecords.find(keyHash));
    if (!record || !this.hasher.matches(record.keyHash, keyHash))
      throw apiErrors.unauthorized(invalidApiKeyMessages.unknown);
    if (options.requireCredit && !record.hasCredit)
      throw apiErrors.creditInsufficient(record.owner.kind, record.availableWon);
    const isOrganizationKey = record.owner.kind === "organization";
    return {
      keyId: record.keyId,
      account: record.owner,
      userId: isOrganizationKey ? record.issuedByUserId : record.owner.id,
      organizationId: isOrganizationKey ? record.owner.id : null,
      availableWon: record.availableWon,
      allowedModels: record.allowedModels,
      hasSpendOrRateLimit: record.hasSpendOrRateLimit,
    };
  }
}

/** A header that is not `Bearer <token>`: a bare key is the common slip, told apart from any other form. */
function notBearerMessageOf(header: string): string {
  return looksLikeApiKey(header.trim())
    ? invalidApiKeyMessages.withoutBearer
    : invalidApiKeyMessages.notBearer;
}
