import { describe, expect, it } from "vitest";
import { type OidcSettings, OidcSignInRefused, sessionOfClaims } from "../../src/sessions/oidc-sign-in";

/**
 * The claims an ID token carries, read into the gateway's session (C14): the user claim is required and must
 * be a usable id; the role claim never refuses a sign-in — a value naming no role of ours is ignored, and a
 * list of roles, as several providers send them, gives the strongest of ours it names.
 */

const settings: OidcSettings = {
  issuer: "https://id.example.com",
  clientId: "console",
  clientSecret: undefined,
  userClaim: "sub",
  organizationClaim: "org_id",
  roleClaim: "roles",
};

const roleOf = (roles: unknown) =>
  sessionOfClaims({ sub: "mina", org_id: "acme", roles }, settings).providerRole;

describe("an ID token's claims as a session", () => {
  it("carries a text role verbatim, within an organization only", () => {
    expect(roleOf("admin")).toBe("admin");
    expect(roleOf("superuser")).toBe("superuser");
    expect(sessionOfClaims({ sub: "mina", roles: "admin" }, settings)).toEqual({
      userId: "mina",
      organizationId: null,
    });
  });

  it("given a list of roles, then the strongest of ours it names; none of ours, no role", () => {
    expect(roleOf(["member", "admin", "billing-viewer"])).toBe("admin");
    expect(roleOf(["owner", "member"])).toBe("owner");
    expect(roleOf(["offline_access", "uma_authorization"])).toBeUndefined();
    expect(roleOf([])).toBeUndefined();
  });

  it("given a role claim of any other shape, then the sign-in goes on with no role", () => {
    for (const odd of [{ admin: true }, true, 42.5, "", "a".repeat(300), "bad\u0000role", null])
      expect(roleOf(odd), JSON.stringify(odd)).toBeUndefined();
  });

  it("refuses a user claim that is no usable id, naming the claim", () => {
    expect(() => sessionOfClaims({ sub: ["mina"] }, settings)).toThrow(OidcSignInRefused);
    expect(() => sessionOfClaims({ sub: "a".repeat(300) }, settings)).toThrow("claim-invalid (sub)");
    expect(sessionOfClaims({ sub: 1001 }, settings).userId).toBe("1001");
  });

  it("refuses a user or organization claim that is blank or has whitespace at either end, never trimming it", () => {
    for (const sub of [" ", "\t", " mina", "mina\n"])
      expect(() => sessionOfClaims({ sub }, settings), JSON.stringify(sub)).toThrow("claim-invalid (sub)");
    expect(() => sessionOfClaims({ sub: "mina", org_id: "acme " }, settings)).toThrow(
      "claim-invalid (org_id)",
    );
    expect(sessionOfClaims({ sub: "kim mina", org_id: "acme corp" }, settings)).toEqual({
      userId: "kim mina",
      organizationId: "acme corp",
    });
  });
});
