import { SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import type { EndedSessions } from "../../src/sessions/ended-sessions";
import { SessionTokens } from "../../src/sessions/session-tokens";

/**
 * Session tokens (C4): HS256 under SESSION_SECRET, `sub` required, `org` optional, `exp`. Whatever else a
 * token says, only one the gateway or its platform signed, unexpired, naming accounts by their ids, is a
 * session; anything else is none (401/110 at the edge).
 */

const secret = "test-session-secret-0123456789abcdef0123456789";
const key = new TextEncoder().encode(secret);
const now = Math.floor(Date.now() / 1_000);
/** The ended sessions in memory (PostgresEndedSessions is tested through the HTTP edge, sign-out.test.ts). */
const ended = new Map<string, Date>();
const endedSessions: EndedSessions = {
  end: async (tokenDigest, expiresAt) => void ended.set(tokenDigest.toString("hex"), expiresAt),
  isEnded: async (tokenDigest) => ended.has(tokenDigest.toString("hex")),
};
const tokens = new SessionTokens(secret, false, endedSessions);

function signed(
  claims: Record<string, unknown>,
  options: { alg?: string; key?: Uint8Array; exp?: number } = {},
) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? "HS256" })
    .setSubject("alice")
    .setIssuedAt(now)
    .setExpirationTime(options.exp ?? now + 600)
    .sign(options.key ?? key);
}

describe("a session token", () => {
  it("given one signed as the platform does, then it is alice's session in her organization", async () => {
    expect(await tokens.verify(await signed({ org: "acme" }))).toEqual({
      userId: "alice",
      organizationId: "acme",
    });
  });

  it("given one unsigned, signed with another secret or another algorithm, or a second past its exp, then no session", async () => {
    const unsigned = new UnsecuredJWT({ org: "acme" })
      .setSubject("alice")
      .setExpirationTime(now + 600)
      .encode();
    const otherSecret = new TextEncoder().encode("another-session-secret-0123456789abcdef012345");
    for (const [what, token] of [
      ["alg none", unsigned],
      ["another secret", await signed({}, { key: otherSecret })],
      ["HS512 under the secret", await signed({}, { alg: "HS512" })],
      ["expired", await signed({}, { exp: now - 1 })],
    ] as const) {
      expect(await tokens.verify(token), what).toBeUndefined();
    }
  });

  it("given an nbf a few seconds ahead (a platform whose clock runs ahead of this gateway's), then it is a session; an nbf minutes ahead is none", async () => {
    const notBefore = (seconds: number) =>
      new SignJWT({ org: "acme" })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject("alice")
        .setIssuedAt(now + seconds)
        .setNotBefore(now + seconds)
        .setExpirationTime(now + 600)
        .sign(key);
    expect(await tokens.verify(await notBefore(5))).toEqual({ userId: "alice", organizationId: "acme" });
    expect(await tokens.verify(await notBefore(300))).toBeUndefined();
  });

  it("given an org claim that is no organization id (a number, a list, an object, a boolean), then no session, as for such a sub, rather than a session of no organization", async () => {
    for (const org of [42, ["acme"], { id: "acme" }, true]) {
      expect(await tokens.verify(await signed({ org })), JSON.stringify(org)).toBeUndefined();
    }
    // Saying there is none, as platforms do for a user of no organization, stays a session of none.
    for (const org of ["", null]) {
      expect(await tokens.verify(await signed({ org })), JSON.stringify(org)).toEqual({
        userId: "alice",
        organizationId: null,
      });
    }
  });
});

describe("a session signed out", () => {
  it("given a token ended, then it is no session, and another minted for the same user in the same second still is", async () => {
    const issuedAt = new Date();
    const session = { userId: "alice", organizationId: "acme" };
    const signedOut = await tokens.mint(session, 600, issuedAt);
    const other = await tokens.mint(session, 600, issuedAt);

    await tokens.end(signedOut.token);

    expect(await tokens.verify(signedOut.token)).toBeUndefined();
    expect(await tokens.verify(other.token)).toEqual(session);
    // Kept until the token's own expiry, by its digest: the token itself is nowhere.
    expect([...ended.values()]).toContainEqual(signedOut.expiresAt);
    expect([...ended.keys()].join()).not.toContain(signedOut.token);
  });

  it("given a token forged, expired or of another secret, when it is signed out, then nothing is recorded", async () => {
    const otherSecret = new TextEncoder().encode("another-session-secret-0123456789abcdef012345");
    const recorded = ended.size;
    for (const token of [
      "not a token",
      await signed({}, { exp: now - 1 }),
      await signed({}, { key: otherSecret }),
    ])
      await tokens.end(token);
    expect(ended.size).toBe(recorded);
  });
});
