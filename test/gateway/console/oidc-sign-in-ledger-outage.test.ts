import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signInOverHttp } from "../../console/support/oidc-sign-in-over-http";
import { type OpenIdProvider, startOpenIdProvider } from "../../console/support/openid-provider";
import { capturedLog } from "../../support/captured-log";
import { type ConnectionCutter, cutterInFrontOf } from "../../support/connection-cutter";
import { createTestDatabase, type TestDatabase } from "../../support/database";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";

/**
 * A sign-in through the identity provider records the role it claims (OIDC_ROLE_CLAIM) before the session is
 * minted. When the gateway's own PostgreSQL is out of reach at that moment, the page and the log must say so:
 * the provider answered well, and an operator sent to it would look in the wrong place.
 */

interface Line {
  level: number;
  msg: string;
  reason?: string;
}

describe("an OpenID Connect sign-in while the gateway's database is away", () => {
  const { logger, lines } = capturedLog<Line>();
  let provider: OpenIdProvider;
  let database: TestDatabase;
  let cutter: ConnectionCutter;
  let harness: GatewayHarness;

  beforeAll(async () => {
    provider = await startOpenIdProvider({ mina: { claims: { org_id: "acme", org_role: "admin" } } });
    database = await createTestDatabase("oidc_sign_in_outage");
    const behindCutter = await cutterInFrontOf(database.url);
    cutter = behindCutter.cutter;
    harness = await startGatewayHarness({
      database,
      service: {
        databaseUrl: behindCutter.url,
        logger,
        oidc: {
          issuer: provider.issuer,
          clientId: provider.clientId,
          clientSecret: provider.clientSecret,
          userClaim: "sub",
          organizationClaim: "org_id",
          roleClaim: "org_role",
        },
      },
    });
    provider.register(`${harness.url}/console/oidc/callback`);
  }, 120_000);

  afterAll(async () => {
    cutter?.restore();
    await harness?.close();
    await cutter?.close();
    await database?.drop();
    await provider?.close();
  });

  it("given PostgreSQL cut, when a user signs in at the provider, then the page is 503 saying the gateway could not record it, not that the provider failed, and the log says the same; once back, the sign-in works", async () => {
    cutter.cut();
    const refused = await signInOverHttp(harness.url, "mina");
    expect(refused.signedIn).toBe(false);
    if (refused.signedIn) return;
    expect(refused.status).toBe(503);
    expect(/data-reason="([^"]+)"/.exec(refused.html)?.[1]).toBe("gateway-unavailable");
    expect(refused.html).not.toMatch(/identity provider could not be reached/);
    const logged = lines.filter((line) => line.msg === "oidc sign-in refused");
    expect(logged.map((line) => [line.reason, line.level])).toEqual([["gateway-unavailable", 50]]);

    cutter.restore();
    const signedIn = await signInOverHttp(harness.url, "mina");
    expect(signedIn.signedIn).toBe(true);
  });
});
