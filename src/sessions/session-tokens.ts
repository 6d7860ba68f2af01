import { errors, jwtVerify, SignJWT } from "jose";

/**
 * Logged-in sessions (C4): HS256 JWTs signed with SESSION_SECRET, claims `sub` (user id), optional `org`
 * (organization id) and `exp`. The platform that logs users in mints them; so does POST /admin/sessions.
 */

export interface Session {
  userId: string;
  organizationId: string | null;
}

const algorithm = "HS256";
export const sessionTtlSecondsDefault = 12 * 60 * 60;
export const sessionTtlSecondsMax = 30 * 24 * 60 * 60;

export class SessionTokens {
  private readonly key: Uint8Array;

  constructor(secret: string) {
    this.key = new TextEncoder().encode(secret);
  }

  async mint(
    session: Session,
    ttlSeconds: number,
    now = new Date(),
  ): Promise<{ token: string; expiresAt: Date }> {
    const issuedAt = Math.floor(now.getTime() / 1_000);
    const expiresAtSeconds = issuedAt + ttlSeconds;
    const claims = session.organizationId ? { org: session.organizationId } : {};
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: algorithm })
      .setSubject(session.userId)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAtSeconds)
      .sign(this.key);
    return { token, expiresAt: new Date(expiresAtSeconds * 1_000) };
  }

  /** The session, or undefined for anything that is not a valid, unexpired token of ours. */
  async verify(token: string): Promise<Session | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [algorithm],
        requiredClaims: ["sub", "exp"],
      });
      if (typeof payload.sub !== "string" || payload.sub === "") return undefined;
      const organizationId = typeof payload.org === "string" && payload.org !== "" ? payload.org : null;
      return { userId: payload.sub, organizationId };
    } catch (error) {
      if (error instanceof errors.JOSEError) return undefined;
      throw error;
    }
  }
}
