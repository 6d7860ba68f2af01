import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { errors, jwtVerify, SignJWT } from "jose";
import { sessionLimits } from "../../kernel/limits";
import { type EndedSessions, endedSessionDigestOf } from "../../sessions/ended-sessions";
import type { OidcTransaction } from "../../sessions/oidc-sign-in";
import type { Session } from "../../sessions/session-tokens";
import type { RedeemedSignInCodes } from "./redeemed-sign-in-codes";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * What the web console adds to the sessions of C4: a CSRF token bound to each cookie, the admin console's
 * cookie (the admin token exchanged once, never kept by the page), and one-time sign-in links.
 *
 * Every secret here is derived from SESSION_SECRET under its own label, so a token of one kind never
 * verifies as another: an admin cookie is not a user session, a sign-in code is not a session. The admin
 * cookie's key is derived from ADMIN_TOKEN too, so that rotating the token signs every admin out. Signing out
 * of the admin console ends its cookie for every gateway process, as a user's sign-out ends their session.
 */

export const sessionCookieName = "session";
export const adminCookieName = "admin_session";
/**
 * Set beside the admin cookie, readable by the page and holding no secret ("1"): it tells the console that an
 * admin signed in on this browser, so pages ask `/console/api/admin-session` only then, rather than every page
 * asking and logging a 401 for every user who is not an admin.
 */
export const adminHintCookieName = "console_admin";
export const csrfHeaderName = "x-csrf-token";
/** An OpenID Connect sign-in in progress: its state, nonce and PKCE verifier, signed, until the callback. */
export const oidcTransactionCookieName = "oidc_sign_in";

const adminAudience = "won-gateway:console-admin";
const signInAudience = "won-gateway:console-sign-in";
const oidcAudience = "won-gateway:console-oidc";

export class ConsoleAuth {
  private readonly csrfKey: Buffer;
  private readonly adminKey: Uint8Array;
  private readonly signInKey: Uint8Array;
  private readonly oidcKey: Uint8Array;
  private readonly adminTokenDigest: Buffer | undefined;

  constructor(
    sessionSecret: string,
    adminToken: string | undefined,
    private readonly redeemedCodes: RedeemedSignInCodes,
    private readonly endedSessions: EndedSessions,
  ) {
    this.csrfKey = derive(sessionSecret, "console-csrf");
    this.adminKey = derive(
      sessionSecret,
      `console-admin:${adminToken === undefined ? "" : digest(adminToken).toString("hex")}`,
    );
    this.signInKey = derive(sessionSecret, "console-sign-in");
    this.oidcKey = derive(sessionSecret, "console-oidc");
    this.adminTokenDigest = adminToken === undefined ? undefined : digest(adminToken);
  }

  /** The CSRF token of a cookie: HMAC of its value, so it needs no storage and dies with the cookie. */
  csrfTokenOf(cookieValue: string): string {
    return createHmac("sha256", this.csrfKey).update(cookieValue).digest("base64url");
  }

  csrfTokenMatches(cookieValue: string, presented: string | undefined): boolean {
    if (presented === undefined) return false;
    const expected = Buffer.from(this.csrfTokenOf(cookieValue));
    const given = Buffer.from(presented);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  adminTokenMatches(presented: string): boolean {
    if (this.adminTokenDigest === undefined) return false;
    return timingSafeEqual(digest(presented), this.adminTokenDigest);
  }

  async mintAdminCookie(now = new Date()): Promise<string> {
    const issuedAt = Math.floor(now.getTime() / 1_000);
    // A jti of its own: two sign-ins in the same second are two cookies, and signing one out leaves the other.
    return new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("admin")
      .setAudience(adminAudience)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + sessionLimits.adminCookieTtlSeconds)
      .sign(this.adminKey);
  }

  /** Signed for this admin token, unexpired, and not signed out: one probe of the ended sessions, if so far. */
  async adminCookieIsValid(value: string): Promise<boolean> {
    if (this.adminTokenDigest === undefined) return false;
    if ((await verified(value, this.adminKey, adminAudience)) === undefined) return false;
    return !(await this.endedSessions.isEnded(endedSessionDigestOf(value)));
  }

  /** Ends an admin cookie for every gateway process until it expires; nothing for one that is not valid. */
  async endAdminCookie(value: string): Promise<void> {
    if (this.adminTokenDigest === undefined) return;
    const payload = await verified(value, this.adminKey, adminAudience);
    if (payload?.exp === undefined) return;
    await this.endedSessions.end(endedSessionDigestOf(value), new Date(payload.exp * 1_000));
  }

  /** An OpenID Connect sign-in's state, nonce, PKCE verifier and callback URL, good for minutes. */
  async mintOidcTransaction(transaction: OidcTransaction, now = new Date()): Promise<string> {
    const issuedAt = Math.floor(now.getTime() / 1_000);
    return new SignJWT({ ...transaction })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("oidc-sign-in")
      .setAudience(oidcAudience)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + sessionLimits.oidcTransactionTtlSeconds)
      .sign(this.oidcKey);
  }

  /** The transaction a cookie carries; undefined when it is missing, forged or expired. */
  async oidcTransactionOf(value: string | undefined): Promise<OidcTransaction | undefined> {
    if (value === undefined) return undefined;
    const payload = await verified(value, this.oidcKey, oidcAudience);
    if (!payload) return undefined;
    const { state, nonce, codeVerifier, redirectUri } = payload;
    if (
      typeof state !== "string" ||
      typeof nonce !== "string" ||
      typeof codeVerifier !== "string" ||
      typeof redirectUri !== "string"
    )
      return undefined;
    return { state, nonce, codeVerifier, redirectUri };
  }

  /** A link code that signs `session` in once: a short-lived signed claim with a unique id. */
  async mintSignInCode(session: Session, now = new Date()): Promise<string> {
    return (await this.mintSignInLink(session, now)).code;
  }

  /** The code and when it expires. */
  async mintSignInLink(session: Session, now = new Date()): Promise<{ code: string; expiresAt: Date }> {
    const issuedAt = Math.floor(now.getTime() / 1_000);
    const expiresAt = new Date((issuedAt + sessionLimits.signInCodeTtlSeconds) * 1_000);
    const code = await new SignJWT(session.organizationId ? { org: session.organizationId } : {})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(session.userId)
      .setAudience(signInAudience)
      .setJti(randomUUID())
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + sessionLimits.signInCodeTtlSeconds)
      .sign(this.signInKey);
    return { code, expiresAt };
  }

  /** The session a code signs in, once; undefined when it is invalid, expired or already used. */
  async redeemSignInCode(code: string): Promise<Session | undefined> {
    const payload = await verified(code, this.signInKey, signInAudience);
    if (!payload || typeof payload.sub !== "string" || typeof payload.jti !== "string") return undefined;
    if (!uuidPattern.test(payload.jti) || typeof payload.exp !== "number") return undefined;
    if (!(await this.redeemedCodes.claim(payload.jti, new Date(payload.exp * 1_000)))) return undefined;
    return { userId: payload.sub, organizationId: typeof payload.org === "string" ? payload.org : null };
  }
}

async function verified(token: string, key: Uint8Array, audience: string) {
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: ["HS256"],
      audience,
      requiredClaims: ["sub", "exp"],
    });
    return payload;
  } catch (error) {
    if (error instanceof errors.JOSEError) return undefined;
    throw error;
  }
}

function derive(secret: string, label: string): Buffer {
  return createHmac("sha256", secret).update(label).digest();
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** The value of cookie `name` in a Cookie header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const [cookieName, ...value] = part.trim().split("=");
    if (cookieName === name && value.length > 0) {
      try {
        return decodeURIComponent(value.join("="));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

export function isSafeMethod(method: string): boolean {
  return method === "GET" || method === "HEAD" || method === "OPTIONS";
}
