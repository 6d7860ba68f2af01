import { describe, expect, it } from "vitest";
import { ConsoleAuth } from "../../../src/gateway/console/console-auth";
import type { RedeemedSignInCodes } from "../../../src/gateway/console/redeemed-sign-in-codes";
import type { EndedSessions } from "../../../src/sessions/ended-sessions";

/** The admin console's cookie lives as long as the admin token it was exchanged for, not a second longer. */

const sessionSecret = "test-session-secret-0123456789abcdef0123456789";
// The admin cookie never redeems a sign-in code.
const noCodes: RedeemedSignInCodes = {
  claim: async () => {
    throw new Error("an admin cookie redeems no sign-in code");
  },
};
// No admin signs out here (sign-out.test.ts does, through the HTTP edge).
const noneEnded: EndedSessions = {
  end: async () => {
    throw new Error("no admin signs out here");
  },
  isEnded: async () => false,
};

describe("the admin cookie across an ADMIN_TOKEN rotation", () => {
  it("given a cookie exchanged for the old token, then a gateway on the new token refuses it and one on the old token takes it", async () => {
    const before = new ConsoleAuth(sessionSecret, "old-admin-token-0123456789abcdef", noCodes, noneEnded);
    const cookie = await before.mintAdminCookie();

    const rotated = new ConsoleAuth(sessionSecret, "new-admin-token-0123456789abcdef", noCodes, noneEnded);
    const restarted = new ConsoleAuth(sessionSecret, "old-admin-token-0123456789abcdef", noCodes, noneEnded);
    const withoutToken = new ConsoleAuth(sessionSecret, undefined, noCodes, noneEnded);

    expect(await rotated.adminCookieIsValid(cookie)).toBe(false);
    expect(await withoutToken.adminCookieIsValid(cookie)).toBe(false);
    expect(await restarted.adminCookieIsValid(cookie)).toBe(true);
    expect(await rotated.adminCookieIsValid(await rotated.mintAdminCookie())).toBe(true);
  });
});
