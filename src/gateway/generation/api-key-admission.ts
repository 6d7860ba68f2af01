import type { AllowedModels } from "../../keys/allowed-models";
import { type ApiKeyHasher, looksLikeApiKey } from "../../keys/api-key-secret";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, missingApiKeyMessage } from "../api-error";
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
}

export class ApiKeyAdmission {
  constructor(
    private readonly admissionRecords: { find(keyHash: string): Promise<AdmissionRecord | undefined> },
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
    if (authorizationHeader === undefined) throw apiErrors.unauthorized(missingApiKeyMessage);
    const presented = bearerTokenOfHeader(authorizationHeader);
    if (!presented || !looksLikeApiKey(presented)) throw apiErrors.unauthorized();
    const keyHash = this.hasher.hash(presented);
    const record = await this.admissionRecords.find(keyHash);
    if (!record || !this.hasher.matches(record.keyHash, keyHash)) throw apiErrors.unauthorized();
    if (options.requireCredit && !record.hasCredit) throw apiErrors.creditInsufficient(record.owner.kind);
    const isOrganizationKey = record.owner.kind === "organization";
    return {
      keyId: record.keyId,
      account: record.owner,
      userId: isOrganizationKey ? record.issuedByUserId : record.owner.id,
      organizationId: isOrganizationKey ? record.owner.id : null,
      availableWon: record.availableWon,
      allowedModels: record.allowedModels,
    };
  }
}
