import { randomUUID } from "node:crypto";
import { decodeJwt, errors, type JWTPayload, jwtVerify, SignJWT } from "jose";
import { isAccountId } from "../kernel/account-id";
import { sessionLimits } from "../kernel/limits";
import { type EndedSessions, endedSessionDigestOf } from "./ended-sessions";

/**
 * Logged-in sessions (C4): HS256 JWTs signed with SESSION_SECRET, claims `sub` (user id), optional `org`
 * (organization id) and `exp`. The platform that logs users in mints them; so does POST /admin/sessions.
 * A console sign-in by OpenID Connect adds `org_role` when the provider's role claim is configured, and only
 * then is it read. A token is a session until its `exp`, or until it is signed out (`end`), whichever is
 * first: however it is carried, cookie or bearer, it is one session.
 */

export interface Session {
  userId: string;
  organizationId: string | null;
  /**
   * The user's role in `organizationId` as the identity provider claimed it (OIDC_ROLE_CLAIM), verbatim;
   * absent when no provider said. Organization roles (C14) decide what it grants; a claimed role wins.
   */
  providerRole?: string;
  /**
   * When the provider made the claim the session carries: the token's `iat`, beside `providerRole` only (absent
   * without an `iat`). A later claim the provider made at another sign-in wins over this one.
   */
  providerRoleClaimedAt?: Date;
}

const algorithm = "HS256";

export class SessionTokens {
  private readonly key: Uint8Array;

  /**
   * `providerRoles`: whether a token's `org_role` is read — only while a provider's role claim is configured
   * (C14, "a provider's role claim, when configured, wins"). Otherwise it is ignored, whoever put it there: a
   * platform's own claim of that name, or a sign-in from before the claim was unconfigured.
   */
  constructor(
    secret: string,
    private readonly providerRoles: boolean,
    private readonly ended: EndedSessions,
  ) {
    this.key = new TextEncoder().encode(secret);
  }

  async mint(
    session: Session,
    ttlSeconds: number,
    now = new Date(),
  ): Promise<{ token: string; expiresAt: Date }> {
    // Every minting edge validates its ids first; a session whose ids cannot be stored could never hold a key.
    if (
      !isAccountId(session.userId) ||
      (session.organizationId !== null && !isAccountId(session.organizationId))
    )
      throw new Error(
        `a session's user and organization ids must be text PostgreSQL can store, 1 to ${sessionLimits.accountIdLengthMax} characters, neither blank nor with whitespace at either end`,
      );
    const issuedAt = Math.floor(now.getTime() / 1_000);
    const expiresAtSeconds = issuedAt + ttlSeconds;
    const claims = {
      ...(session.organizationId ? { org: session.organizationId } : {}),
      ...(session.organizationId && session.providerRole ? { org_role: session.providerRole } : {}),
    };
    // A jti of its own, so that two sign-ins of one user in the same second are two tokens, and signing one
    // out leaves the other.
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: algorithm })
      .setSubject(session.userId)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAtSeconds)
      .sign(this.key);
    return { token, expiresAt: new Date(expiresAtSeconds * 1_000) };
  }

  /**
   * The session, or undefined for anything that is not a valid, unexpired token of ours, or one signed out.
   * Only a token that is otherwise a session costs a look-up (one probe of the ended sessions' key).
   */
  async verify(token: string): Promise<Session | undefined> {
    const session = await this.sessionOf(token);
    if (session === undefined || (await this.ended.isEnded(endedSessionDigestOf(token)))) return undefined;
    return session;
  }

  /**
   * Ends the session of `token` for every gateway process, whoever carries a copy of it, until its `exp`.
   * Nothing for a token that is no session of ours (forged, expired): there is nothing to end.
   */
  async end(token: string): Promise<void> {
    const payload = await this.verifiedPayloadOf(token);
    if (payload?.exp === undefined) return;
    await this.ended.end(endedSessionDigestOf(token), new Date(payload.exp * 1_000));
  }

  private async sessionOf(token: string): Promise<Session | undefined> {
    const payload = await this.verifiedPayloadOf(token);
    if (!payload) return undefined;
    if (!isAccountId(payload.sub)) return undefined;
    // Absent, null or "": a session of no organization, as platforms write it. Any other value that is no
    // account id (a number, a list) is signed by the platform yet names no account this service can serve,
    // as such a `sub` does: no session, rather than one silently of no organization.
    const organizationId =
      payload.org === undefined || payload.org === null || payload.org === "" ? null : payload.org;
    if (organizationId !== null && !isAccountId(organizationId)) return undefined;
    const providerRole =
      this.providerRoles &&
      organizationId !== null &&
      typeof payload.org_role === "string" &&
      isAccountId(payload.org_role)
        ? payload.org_role
        : undefined;
    if (providerRole === undefined) return { userId: payload.sub, organizationId };
    return {
      userId: payload.sub,
      organizationId,
      providerRole,
      ...(typeof payload.iat === "number" ? { providerRoleClaimedAt: new Date(payload.iat * 1_000) } : {}),
    };
  }

  /** The claims of a token signed under the secret and not past its `exp`; undefined for any other. */
  private async verifiedPayloadOf(token: string): Promise<JWTPayload | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [algorithm],
        requiredClaims: ["sub", "exp"],
        // jose's leeway covers exp too: the token's own exp is checked again below, without it.
        clockTolerance: sessionLimits.notBeforeLeewaySeconds,
      });
      if ((payload.exp ?? 0) <= Math.floor(Date.now() / 1_000)) return undefined;
      return payload;
    } catch (error) {
      if (error instanceof errors.JOSEError) return undefined;
      throw error;
    }
  }
}

/** Whole seconds until a verified token's `exp` (0 once past): what a cookie carrying it may live. */
export function secondsUntilExpiry(verifiedToken: string, nowMs = Date.now()): number {
  const { exp } = decodeJwt(verifiedToken);
  if (typeof exp !== "number") throw new Error("a verified session token has an exp");
  return Math.max(0, Math.floor(exp - nowMs / 1_000));
}
