import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * `POST /admin/sessions` hands the admin a user's session: like a sign-in link, it is someone acting as that
 * user, so the log says which admin asked, in which request, for whom and until when — never the token.
 */

let harness: GatewayHarness;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  const capture = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  harness = await startGatewayHarness({
    label: "admin_sessions",
    service: { adminToken: testSecrets.adminToken, logger: pino({ level: "info" }, capture) },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

describe("POST /admin/sessions", () => {
  it("given an admin mints a session for a user, then the log names the admin, the request, the user and the expiry, and not the token", async () => {
    // When
    const response = await fetch(`${harness.url}/admin/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ userId: "mina", organizationId: "hanbit", ttlSeconds: 600 }),
    });

    // Then
    expect(response.status).toBe(201);
    const { token, expiresAt } = (await response.json()) as { token: string; expiresAt: string };
    const minted = logLines.filter((line) => line.msg === "session minted");
    expect(minted).toEqual([
      expect.objectContaining({
        actor: "admin",
        requestId: response.headers.get("x-request-id"),
        userId: "mina",
        organizationId: "hanbit",
        expiresAt,
      }),
    ]);
    expect(logLines.some((line) => JSON.stringify(line).includes(token))).toBe(false);
  });
});
