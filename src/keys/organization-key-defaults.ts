import type { EventData } from "../ledger/events";
import type { RecordedEvent } from "../ledger/store/event-store";

/**
 * An organization's defaults for its new keys: the models they may call. A fold of the organization's own
 * stream, read at each issuance of one of its keys, so a key issued after the change starts with it and no
 * projection stands between the two.
 */

export interface OrganizationKeyDefaults {
  organizationId: string;
  /** The slugs and family words a new key may call; null: every model. */
  allowedModels: string[] | null;
}

export function organizationStreamOf(organizationId: string): string {
  return `organization-${organizationId}`;
}

/** The latest `OrganizationKeyDefaultsSet` of the stream, or none set (every model). */
export function foldOrganizationKeyDefaults(
  organizationId: string,
  events: readonly RecordedEvent[],
): OrganizationKeyDefaults {
  let allowedModels: string[] | null = null;
  for (const event of events) {
    if (event.type === "OrganizationKeyDefaultsSet") allowedModels = event.data.allowedModels;
  }
  return { organizationId, allowedModels };
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
