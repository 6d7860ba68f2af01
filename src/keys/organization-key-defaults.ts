import type { EventData } from "../ledger/events";
import type { RecordedEventOf } from "../ledger/store/event-store";

/**
 * An organization's defaults for its new keys: the models they may call. The latest change on the
 * organization's own stream, read at each issuance of one of its keys, so a key issued after the change
 * starts with it and no projection stands between the two.
 */

export interface OrganizationKeyDefaults {
  organizationId: string;
  /** The slugs and family words a new key may call; null: every model. */
  allowedModels: string[] | null;
}

export function organizationStreamOf(organizationId: string): string {
  return `organization-${organizationId}`;
}

/** The defaults the organization's latest `OrganizationKeyDefaultsSet` set, or none set (every model). */
export function organizationKeyDefaultsOf(
  organizationId: string,
  latest: RecordedEventOf<"OrganizationKeyDefaultsSet"> | undefined,
): OrganizationKeyDefaults {
  return { organizationId, allowedModels: latest?.data.allowedModels ?? null };
}

/**
 * The limits event a new key of the organization starts with, when its defaults limit anything: only its
 * models (an organization sets no default spend or rate limit).
 */
export function defaultLimitsOf(
  defaults: OrganizationKeyDefaults,
  key: Pick<EventData<"ApiKeyLimitsSet">, "keyId" | "owner">,
): EventData<"ApiKeyLimitsSet"> | undefined {
  if (defaults.allowedModels === null) return undefined;
  return {
    ...key,
    monthlySpendLimitWon: null,
    totalSpendLimitWon: null,
    rateLimitRequestsPerMinute: null,
    allowedModels: defaults.allowedModels,
  };
}
