import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "./../support/gateway-harness";
import { callJson } from "./../support/json-call";

/**
 * One bound on the id of a user or an organization (256 characters) wherever one is taken: whoever a
 * session or a sign-in names can also be funded, given a role and looked up by an admin; a longer id is
 * refused everywhere, a session naming one included.
 */

let harness: GatewayHarness;
const longest = (letter: string) => letter.repeat(256);
const tooLong = (letter: string) => letter.repeat(257);

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "account_id_bounds",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

const admin = (method: string, path: string, body?: unknown) =>
  callJson(harness.url, method, path, testSecrets.adminToken, body);

describe("ids of 256 characters", () => {
  it("given a user and an organization of 256-character ids, then each route naming them serves them", async () => {
    const [userId, organizationId, memberId] = [longest("u"), longest("o"), longest("m")];
    const minted = await admin("POST", "/admin/sessions", { userId, organizationId });
    expect(minted.status).toBe(201);
    const session = minted.body.token as string;

    const members = await callJson(harness.url, "GET", "/llm/organization/members", session);
    expect(members.body).toMatchObject({ you: { userId, role: "owner" } });
    const granted = await callJson(harness.url, "PUT", `/llm/organization/members/${memberId}`, session, {
      role: "admin",
    });
    expect(granted.status).toBe(200);

    expect(
      (await admin("POST", `/admin/accounts/organization/${organizationId}/credits`, { amountWon: "5" }))
        .status,
    ).toBe(201);
    expect((await admin("POST", `/admin/accounts/user/${userId}/credits`, { amountWon: "5" })).status).toBe(
      201,
    );
    expect((await admin("GET", `/admin/activity?account=user:${userId}`)).status).toBe(200);
    expect((await admin("GET", `/admin/billing?account=organization:${organizationId}`)).status).toBe(200);
    expect((await admin("POST", "/admin/sign-in-links", { userId, organizationId })).status).toBe(201);
    expect(
      (await admin("PUT", `/admin/organizations/${organizationId}/key-defaults`, { allowedModels: null }))
        .status,
    ).toBe(200);
    const key = await admin("POST", "/admin/keys", {
      account: `organization:${organizationId}`,
      name: "for a member",
      issuedForUserId: memberId,
    });
    expect(key.status).toBe(201);
  });

  it("given 257 characters, then every route refuses 400/100, and a session naming them is no session (401/110)", async () => {
    const id = tooLong("x");
    for (const reply of [
      await admin("POST", "/admin/sessions", { userId: id }),
      await admin("POST", `/admin/accounts/user/${id}/credits`, { amountWon: "5" }),
      await admin("GET", `/admin/activity?account=user:${id}`),
      await admin("GET", `/admin/billing?account=user:${id}`),
      await admin("POST", "/admin/sign-in-links", { userId: id }),
      await admin("POST", "/admin/keys", { account: `user:${id}`, name: "k" }),
      await admin("GET", `/admin/organizations/${id}/key-defaults`),
      await admin("PUT", `/admin/organizations/${id}/key-defaults`, { allowedModels: null }),
      await callJson(
        harness.url,
        "PUT",
        `/llm/organization/members/${id}`,
        await harness.session("owner-of-bounds", "bounds"),
        { role: "member" },
      ),
    ]) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
    }

    // Signed with the platform's secret, yet naming an id no route could serve.
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(id)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(testSecrets.sessionSecret));
    const refused = await callJson(harness.url, "GET", "/llm/apis", token);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ status: 110 });
  });
});
