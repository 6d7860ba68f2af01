import * as client from "openid-client";
import { isAccountId } from "../kernel/account-id";
import { sessionLimits } from "../kernel/limits";
import { isStorableText } from "../kernel/storable-text";
import { organizationRoles } from "../ledger/events";
import type { Session } from "./session-tokens";

/**
 * Console sign-in by OpenID Connect (C14), the relying party's side: authorization code with PKCE (S256), a
 * `state` and a `nonce` per attempt, the ID token verified by openid-client (signature against the provider's
 * JWKS, issuer, audience, expiry, nonce), then the configured claims read into the gateway's own session.
 * No HTTP framework here: the console's routes carry the transaction in a signed cookie between the two legs.
 */

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Absent: a public client (PKCE alone authenticates the code exchange). */
  clientSecret: string | undefined;
  /** The claim whose value is the user id (`sub` by default). */
  userClaim: string;
  /** The claim whose value is the organization id; absent claim: a session of no organization. */
  organizationClaim: string | undefined;
  /** The claim whose value is the user's role in that organization, carried as `Session.providerRole`. */
  roleClaim: string | undefined;
}

/** What the callback must find again: kept by the browser in a signed, short-lived, httpOnly cookie. */
export interface OidcTransaction {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** The callback URL the authorization request named; the token request must name it again. */
  redirectUri: string;
}

export const oidcRefusalReasons = [
  "not-configured",
  "transaction-missing",
  "state-mismatch",
  "callback-invalid",
  "provider-error",
  "provider-failed",
  "id-token-expired",
  "id-token-signature",
  "id-token-claims",
  "user-claim-missing",
  "claim-invalid",
  "gateway-unavailable",
] as const;
export type OidcRefusalReason = (typeof oidcRefusalReasons)[number];

/** A sign-in refused for a reason the person signing in is told (never a secret, never a stack). */
export class OidcSignInRefused extends Error {
  constructor(
    readonly reason: OidcRefusalReason,
    /** Safe to show: an OAuth error code or a claim's name, never a token or a secret. */
    readonly detail?: string,
    options?: { cause?: unknown },
  ) {
    super(`OpenID Connect sign-in refused: ${reason}${detail ? ` (${detail})` : ""}`, options);
    this.name = "OidcSignInRefused";
  }
}

/** Scopes asked for: `openid` for the ID token; `profile` and `email` are where providers put most claims. */
const scopes = "openid profile email";

export class OidcSignIn {
  private discovered: Promise<client.Configuration> | undefined;

  constructor(readonly settings: OidcSettings) {}

  /** Where to send the browser, and the transaction to keep until it returns to `redirectUri`. */
  async start(redirectUri: string): Promise<{ authorizationUrl: URL; transaction: OidcTransaction }> {
    try {
      return await this.authorizationRequest(redirectUri);
    } catch (error) {
      throw refusalOf(error);
    }
  }

  private async authorizationRequest(redirectUri: string) {
    const configuration = await this.configuration();
    const transaction: OidcTransaction = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      codeVerifier: client.randomPKCECodeVerifier(),
      redirectUri,
    };
    const authorizationUrl = client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: scopes,
      response_type: "code",
      state: transaction.state,
      nonce: transaction.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(transaction.codeVerifier),
      code_challenge_method: "S256",
    });
    return { authorizationUrl, transaction };
  }

  /** The session the provider's answer at `callbackUrl` signs in; throws OidcSignInRefused saying why not. */
  async finish(callbackUrl: URL, transaction: OidcTransaction): Promise<Session> {
    // Checked here before anything else, so a forged or stale callback is named as such, not as a provider error.
    if (callbackUrl.searchParams.get("state") !== transaction.state)
      throw new OidcSignInRefused("state-mismatch");
    try {
      const configuration = await this.configuration();
      const malformed = malformedCallbackParameterOf(
        callbackUrl.searchParams,
        configuration.serverMetadata(),
      );
      if (malformed !== undefined) throw new OidcSignInRefused("callback-invalid", malformed);
      const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: transaction.codeVerifier,
        expectedState: transaction.state,
        expectedNonce: transaction.nonce,
        idTokenExpected: true,
      });
      const idTokenClaims = tokens.claims();
      if (!idTokenClaims) throw new OidcSignInRefused("id-token-claims");
      const claims = await this.withUserInfo(configuration, idTokenClaims, tokens.access_token);
      return sessionOfClaims(claims, this.settings);
    } catch (error) {
      throw refusalOf(error);
    }
  }

  /** Discovery once, at first use (a provider down at start does not stop the gateway); a failure is retried. */
  private configuration(): Promise<client.Configuration> {
    this.discovered ??= discover(this.settings).catch((error: unknown) => {
      this.discovered = undefined;
      throw refusalOf(error);
    });
    return this.discovered;
  }

  /**
   * Many providers put only `sub` in the ID token and the rest in userinfo: a configured claim the ID token
   * lacks is looked up there (the ID token wins where both say something).
   */
  private async withUserInfo(
    configuration: client.Configuration,
    idTokenClaims: Record<string, unknown>,
    accessToken: string,
  ): Promise<Record<string, unknown>> {
    const { userClaim, organizationClaim, roleClaim } = this.settings;
    const wanted = [userClaim, organizationClaim, roleClaim].filter((name) => name !== undefined);
    const lacking = wanted.some((name) => idTokenClaims[name] === undefined);
    if (!lacking || !configuration.serverMetadata().userinfo_endpoint) return idTokenClaims;
    const subject = typeof idTokenClaims.sub === "string" ? idTokenClaims.sub : client.skipSubjectCheck;
    const userInfo = await client.fetchUserInfo(configuration, accessToken, subject);
    return { ...userInfo, ...idTokenClaims };
  }
}

async function discover(settings: OidcSettings): Promise<client.Configuration> {
  const issuer = new URL(settings.issuer);
  const authentication = settings.clientSecret
    ? client.ClientSecretPost(settings.clientSecret)
    : client.None();
  const configuration = await client.discovery(issuer, settings.clientId, undefined, authentication, {
    timeout: sessionLimits.oidcProviderTimeoutSeconds,
    // config.ts admits http only for a provider on a loopback host (a development provider).
    execute: issuer.protocol === "http:" ? [client.allowInsecureRequests] : [],
  });
  // The ID token's signature is checked against the provider's JWKS, not taken on the word of TLS alone.
  client.enableNonRepudiationChecks(configuration);
  return configuration;
}

/**
 * The parameter a provider's redirect back never has as this one does (RFC 6749 §4.1.2: each once, `code`
 * unless `error`; RFC 9207: `iss` the issuer's, present when the provider says it sends it); undefined when
 * none. openid-client refuses the same, but as an invalid response, which reads as the provider failing:
 * these callbacks are the visitor's own address bar, edited or pasted, or another provider's answer.
 */
function malformedCallbackParameterOf(
  parameters: URLSearchParams,
  provider: client.ServerMetadata,
): string | undefined {
  const repeated = ["state", "code", "iss", "error"].find((name) => parameters.getAll(name).length > 1);
  if (repeated !== undefined) return repeated;
  const issuer = parameters.get("iss");
  if (issuer === null ? provider.authorization_response_iss_parameter_supported : issuer !== provider.issuer)
    return "iss";
  if (parameters.get("code") === null && parameters.get("error") === null) return "code";
  return undefined;
}

/** The gateway's session for the claims: the user claim required, organization and role when configured. */
export function sessionOfClaims(claims: Record<string, unknown>, settings: OidcSettings): Session {
  const userId = claimText(claims, settings.userClaim);
  if (userId === undefined) throw new OidcSignInRefused("user-claim-missing", settings.userClaim);
  const organizationId = settings.organizationClaim
    ? (claimText(claims, settings.organizationClaim) ?? null)
    : null;
  // A role means something only within an organization: without one, none is carried.
  const providerRole =
    settings.roleClaim && organizationId !== null ? roleClaimOf(claims, settings.roleClaim) : undefined;
  return { userId, organizationId, ...(providerRole === undefined ? {} : { providerRole }) };
}

/**
 * The role claim's value, which never refuses a sign-in: text is carried verbatim (a role of ours decides,
 * anything else is ignored where roles are read); a list — as providers that give a user several roles send
 * it — carries the strongest role of ours it names; any other value, or none of ours, carries no role.
 */
function roleClaimOf(claims: Record<string, unknown>, name: string): string | undefined {
  const value = claims[name];
  if (Array.isArray(value)) return organizationRoles.find((role) => value.includes(role));
  return typeof value === "string" && value !== "" && isRoleText(value) ? value : undefined;
}

/** A claim's value as an id: a string or a whole number (some providers number their users); absent: undefined. */
function claimText(claims: Record<string, unknown>, name: string): string | undefined {
  const value = claims[name];
  if (value === undefined || value === null || value === "") return undefined;
  const text = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (!isAccountId(text)) throw new OidcSignInRefused("claim-invalid", name);
  return text;
}

/** A role claim's text: carried when storable and within the claims' bound (a role of ours decides). */
function isRoleText(text: string): boolean {
  return text.length <= sessionLimits.oidcClaimTextLengthMax && isStorableText(text);
}

/** What went wrong, in the words the refusal page uses; anything unforeseen is the provider's failure. */
function refusalOf(error: unknown): OidcSignInRefused {
  if (error instanceof OidcSignInRefused) return error;
  if (error instanceof client.AuthorizationResponseError || error instanceof client.ResponseBodyError)
    return new OidcSignInRefused("provider-error", safeCode(error.error), { cause: error });
  if (error instanceof client.ClientError) {
    const causeMessage = error.cause instanceof Error ? error.cause.message : "";
    switch (error.code) {
      case "OAUTH_JWT_TIMESTAMP_CHECK_FAILED":
        return new OidcSignInRefused("id-token-expired", undefined, { cause: error });
      case "OAUTH_KEY_SELECTION_FAILED":
        return new OidcSignInRefused("id-token-signature", undefined, { cause: error });
      case "OAUTH_JWT_CLAIM_COMPARISON_FAILED":
        return new OidcSignInRefused("id-token-claims", undefined, { cause: error });
      case "OAUTH_INVALID_RESPONSE":
        if (/signature/i.test(causeMessage))
          return new OidcSignInRefused("id-token-signature", undefined, { cause: error });
        break;
    }
  }
  return new OidcSignInRefused("provider-failed", undefined, { cause: error });
}

/** An OAuth error code is `[\x20-\x21\x23-\x5B\x5D-\x7E]+` (RFC 6749); anything else is not shown. */
function safeCode(code: string): string | undefined {
  return /^[a-z0-9_.-]{1,64}$/i.test(code) ? code : undefined;
}
