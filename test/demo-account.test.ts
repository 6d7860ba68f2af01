import { describe, expect, it } from "vitest";
import { firstStartBannerLines } from "../src/demo-account";

/** What the first embedded start prints: amounts as a person reads them, as the README writes them. */

const bannerDetails = {
  baseUrl: "http://127.0.0.1:8080/llm/v1",
  apiKey: "svc_demo",
  sessionToken: "session",
  consoleSignInCode: "code",
  adminToken: "admin",
};

describe("the first start's banner", () => {
  it("says the demo credit with grouped digits (₩10,000)", () => {
    const lines = firstStartBannerLines(bannerDetails);
    const keyLine = lines.find((line) => line.includes("demo API key"));
    expect(keyLine).toContain('(user "demo", ₩10,000)');
    expect(lines.join("\n")).not.toMatch(/₩\d{4}/);
  });

  it("names both files the secrets live in: secrets.json and the ledger signing key", () => {
    const lines = firstStartBannerLines(bannerDetails);
    const text = lines.join("\n");
    expect(text).toMatch(/secrets +\S+\/\.data\/secrets\.json \(admin token, session secret, key pepper\)/);
    expect(text).toMatch(/\S+\/\.data\/ledger-signing-key \(ledger signing key\)/);
  });

  it("names the console and how an admin mints a new sign-in link, as every later start does", () => {
    // The link it prints dies in 15 minutes: a newcomer who comes back later needs the page and a new link.
    const lines = firstStartBannerLines(bannerDetails);
    expect(lines).toContain("  web console     http://127.0.0.1:8080/console/");
    expect(lines).toContain("  sign in         http://127.0.0.1:8080/console/sign-in?code=code");
    expect(lines).toContain(
      '  a new link      POST http://127.0.0.1:8080/admin/sign-in-links {"userId":"…"} with the admin token',
    );
  });
});
