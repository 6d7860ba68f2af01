import type { LedgerEventType } from "../../../../src/ledger/events";

/** Every event type, by name: a record so a type added to the catalog and missing here fails the build. */
const eventTypeNames: Record<LedgerEventType, true> = {
  ApiKeyIssued: true,
  ApiKeyStatusChanged: true,
  ApiKeyDeleted: true,
  ApiKeyLimitsSet: true,
  OrganizationKeyDefaultsSet: true,
  OrganizationRoleGranted: true,
  OrganizationRoleClaimed: true,
  AlertThresholdSet: true,
  WebhookEndpointAdded: true,
  WebhookEndpointRemoved: true,
  WebhookSecretRotated: true,
  CreditToppedUp: true,
  ModelPriceSet: true,
  DiscountSet: true,
  FxRateUpdated: true,
  UsageAuthorized: true,
  UsageRecorded: true,
  UsageVoided: true,
  UsageCharged: true,
};
export const eventTypes = Object.keys(eventTypeNames) as LedgerEventType[];
