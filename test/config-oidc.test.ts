import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";

/** C14's OpenID Connect variables: off without an issuer, and half a configuration stops the start. */

describe("OIDC_* configuration", () => {
  it("is off without OIDC_ISSUER", () => {
    expect(loadConfig({}).oidc).toBeUndefined();
  });

  it("reads the issuer, the client and the claims, the user claim defaulting to sub", () => {
    expect(
      loadConfig({ OIDC_ISSUER: "https://login.example.com/realms/acme", OIDC_CLIENT_ID: "console" }).oidc,
    ).toEqual({
      issuer: "https://login.example.com/realms/acme",
      clientId: "console",
      clientSecret: undefined,
      userClaim: "sub",
      organizationClaim: undefined,
      roleClaim: undefined,
    });
    expect(
      loadConfig({
        OIDC_ISSUER: "http://127.0.0.1:9000",
        OIDC_CLIENT_ID: "console",
        OIDC_CLIENT_SECRET: "secret",
        OIDC_USER_CLAIM: "employee_id",
        OIDC_ORGANIZATION_CLAIM: "org_id",
        OIDC_ROLE_CLAIM: "https://example.com/role",
      }).oidc,
    ).toMatchObject({
      userClaim: "employee_id",
      organizationClaim: "org_id",
      roleClaim: "https://example.com/role",
    });
  });

  it("stops the start with one line naming what is wrong", () => {
    expect(() => loadConfig({ OIDC_ISSUER: "https://login.example.com" })).toThrow(
      "OIDC_CLIENT_ID is required with OIDC_ISSUER",
    );
    expect(() => loadConfig({ OIDC_ISSUER: "http://login.example.com", OIDC_CLIENT_ID: "c" })).toThrow(
      "OIDC_ISSUER must be https://",
    );
    expect(() => loadConfig({ OIDC_ISSUER: "login.example.com", OIDC_CLIENT_ID: "c" })).toThrow(
      "OIDC_ISSUER",
    );
    expect(() => loadConfig({ OIDC_CLIENT_ID: "c" })).toThrow("OIDC_CLIENT_ID is set but OIDC_ISSUER is not");
    expect(() =>
      loadConfig({ OIDC_ISSUER: "https://login.example.com", OIDC_CLIENT_ID: "c", OIDC_USER_CLAIM: "a b" }),
    ).toThrow("OIDC_USER_CLAIM");
  });

  it("given a role claim without an organization claim, then the start stops naming both, where every sign-in would have carried no role", () => {
    expect(() =>
      loadConfig({ OIDC_ISSUER: "https://login.example.com", OIDC_CLIENT_ID: "c", OIDC_ROLE_CLAIM: "role" }),
    ).toThrow("OIDC_ROLE_CLAIM is set but OIDC_ORGANIZATION_CLAIM is not");
  });
});
