/**
 * The console's typed API client. Response types come from the server's own modules (`import type` only:
 * nothing of the server reaches the bundle), so a change of a response shape breaks the console's build; once
 * the OpenAPI document generated from the zod schemas lands, these types are generated from it instead.
 *
 * Auth is cookies only (httpOnly, SameSite=Strict): the page never sees a session or admin token after
 * sign-in. Every write carries the cookie's CSRF token, held in memory here, never in storage.
 */

import type {
  RotatedWebhookSecret,
  WebhookEndpoint as ServerWebhookEndpoint,
} from "../../../src/billing/alerts/alert-service";
import type { DeliveryView } from "../../../src/billing/alerts/webhook-outbox";
import type { AccountKey, AccountSummary } from "../../../src/billing/read-models/admin-read-model";
import type { BillingHistoryEntry } from "../../../src/billing/read-models/billing-history";
import type { DiscountChange, PriceChange } from "../../../src/billing/read-models/pricing-history";
import type { UsageResponse } from "../../../src/gateway/account/usage-routes";
import type { ActivityEntry, ActivityPage } from "../../../src/gateway/activity/activity-read-model";
import type { RequestOutcome } from "../../../src/gateway/activity/request-log-entry";
import type { ConsoleDiscountRow, ConsolePriceRow } from "../../../src/gateway/admin/console-read-routes";
import type { applicationCodes } from "../../../src/gateway/api-error";
import type { EndpointHealth } from "../../../src/gateway/generation/upstream-registry";
import type { PricedModel } from "../../../src/gateway/models/priced-model-list";
import type { KeyLimits as ApiKeyLimits, ApiKeyLimitsView } from "../../../src/keys/api-key-limits";
import type { ApiKeyRecord, IssuedApiKey, ShownKeyLimits } from "../../../src/keys/api-key-service";
import type { OrganizationKeyDefaults } from "../../../src/keys/organization-key-defaults";
import type { OrganizationMember } from "../../../src/keys/organization-role-service";
import type { OrganizationAction, OrganizationRole } from "../../../src/keys/organization-roles";
import type { WebhookEventType } from "../../../src/ledger/events";
import type { LedgerStatus, OnDemandVerification } from "../../../src/ledger/integrity/ledger-status";
import { addDays } from "./format";

export type {
  AccountSummary,
  ActivityEntry,
  ActivityPage,
  BillingHistoryEntry,
  ConsoleDiscountRow,
  ConsolePriceRow,
  DiscountChange,
  EndpointHealth,
  PriceChange,
  PricedModel,
  RequestOutcome,
  UsageResponse,
};
export type UsageDay = UsageResponse["data"][number];
export type LedgerStatusView = LedgerStatus & { store: string; signingKeyConfigured: boolean };
export type LedgerVerification = OnDemandVerification | { outcome: "unsupported"; store: string };
export type KeyLimits = ApiKeyLimits;
export type KeyLimitsView = ApiKeyLimitsView;
/** A key's limits and its spend, null where the reader may not see it (another member's key, C14). */
export type ShownKeyLimitsView = ShownKeyLimits;
export type AccountKeyRow = AccountKey;
/** The models the organization's keys issued from now on may call (null: every model). */
export type KeyDefaults = OrganizationKeyDefaults;

/** Dates cross JSON as ISO strings. */
type Jsonified<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] };
export type ApiKey = Jsonified<ApiKeyRecord>;
export type NewApiKey = Jsonified<IssuedApiKey>;

export type { OrganizationAction, OrganizationMember, OrganizationRole };

/** `GET /llm/organization/members`: the members, and the session's own role with what it may do. */
export interface OrganizationMembers {
  organizationId: string;
  you: { userId: string; role: OrganizationRole; actions: OrganizationAction[] };
  data: OrganizationMember[];
}

/** Alerts by signed webhooks (docs/api.md): an account's low-funds threshold, its endpoints and their deliveries. */
export type { WebhookEventType };
export type WebhookEndpoint = ServerWebhookEndpoint;
/** Only the answer that adds an endpoint carries its signing secret. */
export type AddedWebhookEndpoint = WebhookEndpoint & { secret: string };
/** …and the answer that rotates it, the new one. */
export type { RotatedWebhookSecret };
export type WebhookDelivery = DeliveryView;
export interface AlertThreshold {
  isOrganization: boolean;
  balanceBelowWon: string | null;
}

export interface SessionInfo {
  userId: string;
  organizationId: string | null;
  csrfToken: string;
}

/** An account's balance and what requests in flight hold and recorded usage has pending (C10). */
export interface AccountFunds {
  id: string;
  balanceWon: string;
  heldWon: string;
  pendingWon: string;
}

export interface Balance {
  user: AccountFunds;
  organization: AccountFunds | null;
}

/** One page of `GET /llm/billing` (limit, cursor, order): pass `nextCursor` back for the next, null at the end. */
export interface ChargesPage {
  account: { kind: "user" | "organization"; id: string };
  from: string | null;
  to: string | null;
  data: BillingHistoryEntry[];
  nextCursor: string | null;
}

/** Pending usage of one model the reconciler cannot price at its start, and why. */
export interface UnpriceablePending {
  model: string;
  reason: "unknown-model" | "no-fx-rate";
  requests: number;
  oldestStartedAt: string;
}

export interface AccountView {
  kind: "user" | "organization";
  id: string;
  balanceWon: string;
  pendingWon: string;
  heldWon: string;
  unpriceablePending: UnpriceablePending[];
}

export interface FxRateEntry {
  appliesOn: string;
  rateDate: string;
  rate: string;
  source: string;
  recordedAt: string;
}

export interface LedgerEventRow {
  position: string;
  eventId: string;
  streamId: string;
  streamVersion: number;
  type: string;
  data: Record<string, unknown>;
  metadata: { actor: string; occurredAt: string; correlationId?: string };
  recordedAt: string;
}

export class ApiFailure extends Error {
  constructor(
    readonly httpStatus: number,
    readonly applicationCode: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

const csrf = { user: "", admin: "" };

export type Realm = keyof typeof csrf;

/** The session exchanges themselves: a 401 there is their answer, not news that a session ended. */
const sessionPaths = new Set(["/console/api/session", "/console/api/admin-session"]);
let unauthenticated: (realm: Realm) => void = () => {};

/**
 * Told when any other call of a realm is refused as unauthenticated: its session expired, was signed out in
 * another tab, or was replaced there by someone else's (the CSRF token held here no longer matches).
 */
export function whenUnauthenticated(listener: (realm: Realm) => void): () => void {
  unauthenticated = listener;
  return () => {
    unauthenticated = () => {};
  };
}

/** The server's code for a refusal of the session's role (the type holds it to the server's table). */
const roleRefusedCode: (typeof applicationCodes)["organizationRoleRefused"] = 160;
let refusedForRole: () => void = () => {};

/**
 * Told when a call is refused for the session's role in its organization (403/160): the role changed since
 * the page read it (an owner demoted this admin), and what the page offers should follow the new one.
 */
export function whenRefusedForRole(listener: () => void): () => void {
  refusedForRole = listener;
  return () => {
    refusedForRole = () => {};
  };
}

async function call<T>(
  realm: Realm,
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", ...extraHeaders };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET") headers["x-csrf-token"] = csrf[realm];
  const response = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw await failureOf(realm, path, response);
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * A refusal as the page shows it; a 401 first has the page ask for its session again, a 403/160 for the
 * session's role.
 */
async function failureOf(realm: Realm, path: string, response: Response): Promise<ApiFailure> {
  const text = await response.text();
  // A proxy in front of the gateway may answer an error with a page of its own: the status says enough.
  const error =
    text && isJson(response) ? (JSON.parse(text) as { status?: number; message?: string }) : undefined;
  if (response.status === 401 && !sessionPaths.has(path)) unauthenticated(realm);
  if (response.status === 403 && error?.status === roleRefusedCode) refusedForRole();
  return new ApiFailure(response.status, error?.status, error?.message ?? response.statusText);
}

/** A file the gateway writes (a statement's CSV), with the name it gives it; refused as any call is. */
export interface GatewayFile {
  blob: Blob;
  /** From `Content-Disposition`; null when the gateway names none. */
  fileName: string | null;
}

async function fileOf(realm: Realm, path: string): Promise<GatewayFile> {
  const response = await fetch(path, { credentials: "same-origin" });
  if (!response.ok) throw await failureOf(realm, path, response);
  const disposition = response.headers.get("content-disposition") ?? "";
  const fileName = /filename="?([^";]+)"?/i.exec(disposition)?.[1] ?? null;
  return { blob: await response.blob(), fileName };
}

function isJson(response: Response): boolean {
  return /^application\/(?:[\w.+-]+\+)?json\b/i.test(response.headers.get("content-type") ?? "");
}

function query(parameters: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value) search.set(name, value);
  const text = search.toString();
  return text ? `?${text}` : "";
}

export interface Range {
  from?: string;
  to?: string;
}

export interface ChargesPageRequest {
  /** A `nextCursor` of the previous page; none for the first. */
  cursor?: string | undefined;
  limit: number;
  order: "oldest" | "newest";
}

/** A range of Seoul dates, `to` inclusive, as the billing API wants it (`to` exclusive, the next day). */
function chargesQuery(range: Range, isOrganization: boolean, page: ChargesPageRequest) {
  return query({
    from: range.from,
    to: range.to ? addDays(range.to, 1) : undefined,
    isOrganization: String(isOrganization),
    limit: String(page.limit),
    cursor: page.cursor,
    order: page.order,
  });
}

/** Filters of the activity log; dates are Seoul dates, `to` inclusive. */
export interface ActivityFilters extends Range {
  /** The model requested. */
  model?: string | undefined;
  /** The configured fallback that answered in the requested model's place. */
  answeredBy?: string | undefined;
  keyId?: string | undefined;
  status?: string | undefined;
  outcome?: RequestOutcome | undefined;
  requestId?: string | undefined;
}

function activityQuery(filters: ActivityFilters, page: { cursor?: string | undefined; limit: number }) {
  return {
    from: filters.from,
    to: filters.to ? addDays(filters.to, 1) : undefined,
    model: filters.model,
    answeredBy: filters.answeredBy,
    keyId: filters.keyId,
    status: filters.status,
    outcome: filters.outcome,
    requestId: filters.requestId,
    limit: String(page.limit),
    cursor: page.cursor,
  };
}

export const userApi = {
  async session(): Promise<SessionInfo> {
    const session = await call<SessionInfo>("user", "GET", "/console/api/session");
    csrf.user = session.csrfToken;
    return session;
  },
  async signIn(token: string): Promise<SessionInfo> {
    const session = await call<SessionInfo>("user", "POST", "/console/api/session", { token });
    csrf.user = session.csrfToken;
    return session;
  },
  /** Whether the gateway offers sign-in by OpenID Connect (only when OIDC_ISSUER is set). */
  signInOptions: () => call<{ oidc: boolean }>("user", "GET", "/console/api/sign-in-options"),
  async signOut(): Promise<void> {
    await call("user", "DELETE", "/console/api/session");
    csrf.user = "";
  },
  balance: () => call<Balance>("user", "GET", "/llm/balance"),
  keys: (isOrganization: boolean) =>
    call<{ data: ApiKey[] }>("user", "GET", `/llm/apis${query({ isOrganization: String(isOrganization) })}`),
  issueKey: (body: { name: string; description: string; isOrganization: boolean }) =>
    call<NewApiKey>("user", "POST", "/llm/apis", body),
  setKeyStatus: (uuid: string, status: 0 | 1) =>
    call<{ uuid: string; status: 0 | 1 }>("user", "PATCH", `/llm/apis/${encodeURIComponent(uuid)}/status`, {
      status,
    }),
  deleteKey: (uuid: string) =>
    call<{ uuid: string; deleted: true }>("user", "DELETE", `/llm/apis/${encodeURIComponent(uuid)}`),
  setKeyLimits: (uuid: string, limits: KeyLimits) =>
    call<KeyLimitsView>("user", "PUT", `/llm/apis/${encodeURIComponent(uuid)}/limits`, limits),
  /** The session's organization's models for its new keys; every member reads them. */
  keyDefaults: () => call<KeyDefaults>("user", "GET", "/llm/organization/key-defaults"),
  /** Owners and admins only (403/160); null clears them: new keys may call every model. */
  setKeyDefaults: (allowedModels: string[] | null) =>
    call<KeyDefaults>("user", "PUT", "/llm/organization/key-defaults", { allowedModels }),
  organizationMembers: () => call<OrganizationMembers>("user", "GET", "/llm/organization/members"),
  setMemberRole: (userId: string, role: OrganizationRole) =>
    call<OrganizationMember>("user", "PUT", `/llm/organization/members/${encodeURIComponent(userId)}`, {
      role,
    }),
  clearKeyLimits: (uuid: string) =>
    call<KeyLimitsView>("user", "DELETE", `/llm/apis/${encodeURIComponent(uuid)}/limits`),
  usage: (range: Range, isOrganization: boolean) =>
    call<UsageResponse>(
      "user",
      "GET",
      `/llm/usage${query({ from: range.from, to: range.to, isOrganization: String(isOrganization) })}`,
    ),
  chargesPage: (range: Range, isOrganization: boolean, page: ChargesPageRequest) =>
    call<ChargesPage>("user", "GET", `/llm/billing${chargesQuery(range, isOrganization, page)}`),
  activity: (
    filters: ActivityFilters,
    isOrganization: boolean,
    page: { cursor?: string | undefined; limit: number },
  ) =>
    call<ActivityPage>(
      "user",
      "GET",
      `/llm/usage/activity${query({ ...activityQuery(filters, page), isOrganization: String(isOrganization) })}`,
    ),
  /** Served models with today's price per million tokens for the session (or its organization). */
  models: (isOrganization: boolean) =>
    call<{ object: "list"; data: PricedModel[] }>(
      "user",
      "GET",
      `/llm/models${query({ isOrganization: String(isOrganization) })}`,
    ),
  alertThreshold: (isOrganization: boolean) =>
    call<AlertThreshold>("user", "GET", `/llm/alerts${query({ isOrganization: String(isOrganization) })}`),
  /** `null` clears the threshold. */
  setAlertThreshold: (body: AlertThreshold) => call<AlertThreshold>("user", "PUT", "/llm/alerts", body),
  webhooks: (isOrganization: boolean) =>
    call<{ data: WebhookEndpoint[] }>(
      "user",
      "GET",
      `/llm/webhooks${query({ isOrganization: String(isOrganization) })}`,
    ),
  addWebhook: (body: { url: string; events: WebhookEventType[]; isOrganization: boolean }) =>
    call<AddedWebhookEndpoint>("user", "POST", "/llm/webhooks", body),
  deleteWebhook: (id: string) =>
    call<{ id: string; deleted: true }>("user", "DELETE", `/llm/webhooks/${encodeURIComponent(id)}`),
  /** Newest first, at most 100. */
  webhookDeliveries: (id: string) =>
    call<{ data: WebhookDelivery[] }>("user", "GET", `/llm/webhooks/${encodeURIComponent(id)}/deliveries`),
  /** A new signing secret; the one it replaces still signs beside it for 24 hours. */
  rotateWebhookSecret: (id: string) =>
    call<RotatedWebhookSecret>("user", "POST", `/llm/webhooks/${encodeURIComponent(id)}/secret`),
  /** Queues a `webhook.test` message; the answer is its webhook-id. */
  testWebhook: (id: string) =>
    call<{ id: string }>("user", "POST", `/llm/webhooks/${encodeURIComponent(id)}/test`),
  /** A fresh key for the playground, replacing the last one; it lives in the page's memory only. */
  playgroundKey: (isOrganization: boolean) =>
    call<NewApiKey & { baseUrl: string }>("user", "POST", "/llm/playground/key", { isOrganization }),
};

/** Price and discount changes one page of a history table shows (the API allows up to 1,000). */
const historyRowsShown = 200;

export const adminApi = {
  /** Whether the gateway left its admin sign-in hint (a cookie with no secret): only then is there one to ask for. */
  mayBeSignedIn(): boolean {
    // Through globalThis: the server's type-check (tests import this module) has no DOM library.
    const cookie = (globalThis as { document?: { cookie: string } }).document?.cookie ?? "";
    return cookie.split("; ").includes("console_admin=1");
  },
  /** Resolves true when the admin cookie is valid (a query's data must not be undefined). */
  async session(): Promise<true> {
    csrf.admin = (await call<{ csrfToken: string }>("admin", "GET", "/console/api/admin-session")).csrfToken;
    return true;
  },
  async signIn(adminToken: string): Promise<void> {
    csrf.admin = (
      await call<{ csrfToken: string }>("admin", "POST", "/console/api/admin-session", { adminToken })
    ).csrfToken;
  },
  async signOut(): Promise<void> {
    await call("admin", "DELETE", "/console/api/admin-session");
    csrf.admin = "";
  },
  /** Accounts in (kind, id) order whose id contains `search`; pass `nextCursor` back as `cursor` for the next page. */
  accounts: (parameters: { search?: string; cursor?: string; limit: number }) =>
    call<{ data: AccountSummary[]; nextCursor: string | null }>(
      "admin",
      "GET",
      `/admin/accounts${query({ search: parameters.search, cursor: parameters.cursor, limit: String(parameters.limit) })}`,
    ),
  account: (kind: string, id: string) =>
    call<AccountView>("admin", "GET", `/admin/accounts/${kind}/${encodeURIComponent(id)}`),
  accountKeys: (kind: string, id: string) =>
    call<{ data: AccountKeyRow[] }>("admin", "GET", `/admin/accounts/${kind}/${encodeURIComponent(id)}/keys`),
  setKeyLimits: (uuid: string, limits: KeyLimits) =>
    call<KeyLimitsView>("admin", "PUT", `/admin/keys/${encodeURIComponent(uuid)}/limits`, limits),
  organizationMembers: () => call<OrganizationMembers>("user", "GET", "/llm/organization/members"),
  setMemberRole: (userId: string, role: OrganizationRole) =>
    call<OrganizationMember>("user", "PUT", `/llm/organization/members/${encodeURIComponent(userId)}`, {
      role,
    }),
  clearKeyLimits: (uuid: string) =>
    call<KeyLimitsView>("admin", "DELETE", `/admin/keys/${encodeURIComponent(uuid)}/limits`),
  /** `idempotencyKey`: the same for every attempt at one top-up, so a retried one credits once. */
  topUp: (kind: string, id: string, amountWon: string, reference: string, idempotencyKey: string) =>
    call<{ balanceWon: string }>(
      "admin",
      "POST",
      `/admin/accounts/${kind}/${encodeURIComponent(id)}/credits`,
      { amountWon, reference },
      { "idempotency-key": idempotencyKey },
    ),
  /** A one-time console sign-in link for a user (minutes-short, single use). */
  signInLink: (body: { userId: string; organizationId?: string }) =>
    call<{ path: string; url: string; expiresAt: string }>("admin", "POST", "/admin/sign-in-links", body),
  /** A key for any account, shown once; `issuedForUserId` names the member an organization key is for. */
  issueKey: (body: { account: string; name: string; description: string; issuedForUserId?: string }) =>
    call<NewApiKey>("admin", "POST", "/admin/keys", body),
  prices: () => call<{ data: ConsolePriceRow[] }>("admin", "GET", "/admin/console/prices"),
  setPrice: (
    model: string,
    price: { inputUsdPer1M: string; outputUsdPer1M: string; cachedInputUsdPer1M?: string },
  ) => call<unknown>("admin", "PUT", `/admin/models/${encodeURIComponent(model)}/price`, price),
  discounts: () => call<{ data: ConsoleDiscountRow[] }>("admin", "GET", "/admin/console/discounts"),
  setDiscount: (discount: { model: string | null; organizationId: string | null; rate: string }) =>
    call<unknown>("admin", "PUT", "/admin/discounts", discount),
  /** Ends a scope's rule: a scope left out (null) is "any", so it is left out of the query too. */
  removeDiscount: (scope: { model: string | null; organizationId: string | null }) => {
    const query = new URLSearchParams();
    if (scope.model !== null) query.set("model", scope.model);
    if (scope.organizationId !== null) query.set("organizationId", scope.organizationId);
    return call<unknown>("admin", "DELETE", `/admin/discounts?${query}`);
  },
  /** A page of price changes, newest first (all models' or one's); pass `nextCursor` back as `cursor` for older ones. */
  priceHistory: (model: string | null, cursor?: string) =>
    call<{ data: PriceChange[]; nextCursor: string | null }>(
      "admin",
      "GET",
      `/admin/prices/history${query({ model: model ?? undefined, limit: String(historyRowsShown), cursor })}`,
    ),
  /** A page of discount changes, newest first; pass `nextCursor` back as `cursor` for older ones. */
  discountHistory: (cursor?: string) =>
    call<{ data: DiscountChange[]; nextCursor: string | null }>(
      "admin",
      "GET",
      `/admin/discounts/history${query({ limit: String(historyRowsShown), cursor })}`,
    ),
  fxRates: () =>
    call<{ bankSourceConfigured: boolean; data: FxRateEntry[] }>("admin", "GET", "/admin/fx-rates"),
  setFxRate: (rate: { appliesOn: string; rate: string; rateDate?: string }) =>
    call<unknown>("admin", "POST", "/admin/fx-rates", rate),
  refreshFxRate: () => call<unknown>("admin", "POST", "/admin/fx-rates/refresh"),
  ledgerStatus: () => call<LedgerStatusView>("admin", "GET", "/admin/ledger/status"),
  verifyLedger: () => call<LedgerVerification>("admin", "POST", "/admin/ledger/verify"),
  /** Each upstream endpoint's health as the gateway process that answers sees it (names, never URLs). */
  upstreams: () => call<{ data: EndpointHealth[] }>("admin", "GET", "/admin/upstreams"),
  /** The ledger newest first, filtered on the server; pass `next` back as `before` for the older page. */
  events: (parameters: { stream?: string; type?: string; before?: string; limit: number }) =>
    call<{ order: "desc"; data: LedgerEventRow[]; next: string | null }>(
      "admin",
      "GET",
      `/admin/events${query({
        order: "desc",
        stream: parameters.stream,
        type: parameters.type,
        before: parameters.before,
        limit: String(parameters.limit),
      })}`,
    ),
};

/** Monthly statements (docs/statements-and-receipts.md): the session's own account or its organization's. */
export type MonthlyStatementView =
  import("../../../src/billing/statements/monthly-statement").MonthlyStatement;
export const statementApi = {
  statement: (account: "personal" | "organization", month: string) =>
    call<MonthlyStatementView>("user", "GET", `/llm/statements${query({ account, month })}`),
  csv: (account: "personal" | "organization", month: string) =>
    fileOf("user", `/llm/statements${query({ account, month, format: "csv" })}`),
  /** Any account's statement, for finance (the admin cookie). */
  ofAccount: (kind: "user" | "organization", id: string, month: string) =>
    call<MonthlyStatementView>(
      "admin",
      "GET",
      `/admin/statements/${kind}/${encodeURIComponent(id)}${query({ month })}`,
    ),
  accountCsv: (kind: "user" | "organization", id: string, month: string) =>
    fileOf("admin", `/admin/statements/${kind}/${encodeURIComponent(id)}${query({ month, format: "csv" })}`),
};
