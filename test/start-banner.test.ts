import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { urlHostOf } from "../src/service";
import { startBannerLines } from "../src/start-banner";
import { serviceEntryArgs } from "./support/built-entries";
import { createTestDatabase, type TestDatabase } from "./support/database";
import { spawnService } from "./support/service-process";

/**
 * What an operator sees when starting the service: on every start a banner with the base URL, the console
 * and where the secrets live; a port already in use is one line naming PORT, not a stack trace.
 */

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase("start_banner");
});
afterAll(async () => {
  await database?.drop();
});

function environmentFor(port: number, host = "127.0.0.1"): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    SESSION_SECRET: "banner-session-secret-0123456789abcdef0123456789",
    KEY_PEPPER: "banner-key-pepper-0123456789abcdef0123456789abcd",
    ADMIN_TOKEN: "banner-admin-token-0123456789abcdef0123456789",
    PORT: String(port),
    HOST: host,
    LOG_LEVEL: "warn",
  };
  // BullMQ on this test's own database, so no queue is shared with another test.
  delete environment.REDIS_URL;
  return environment;
}

describe("the start banner", () => {
  it("given a start on a configured database, then it prints the base URL, the console and where the secrets live", async () => {
    const service = await spawnService(process.execPath, serviceEntryArgs, environmentFor(0), {
      readyLine: "a new link",
    });
    try {
      const output = service.output();
      const baseUrl = /base URL +(http:\/\/127\.0\.0\.1:\d+\/llm\/v1)/.exec(output)?.[1];
      expect(baseUrl).toBeDefined();
      const origin = baseUrl!.replace(/\/llm\/v1$/, "");
      expect(output).toContain(`web console   ${origin}/console/`);
      expect(output).toContain("secrets       the environment: ADMIN_TOKEN, SESSION_SECRET, KEY_PEPPER");
      // No demo user on a configured database: no sign-in link for one.
      expect(output).not.toContain("sign in       ");
      const consolePage = await fetch(`${origin}/console/`);
      expect(consolePage.status).toBeLessThan(500);
    } finally {
      service.child.kill("SIGTERM");
      await once(service.child, "exit");
    }
  }, 120_000);

  it("given a wildcard HOST (every address, as the image binds), then the base URL printed is one a client can call", async () => {
    const service = await spawnService(process.execPath, serviceEntryArgs, environmentFor(0, "0.0.0.0"), {
      readyLine: "a new link",
    });
    try {
      const baseUrl = /base URL +(\S+)/.exec(service.output())?.[1];
      expect(baseUrl).toMatch(/^http:\/\/localhost:\d+\/llm\/v1$/);
      const models = await fetch(`${baseUrl}/models`);
      expect(models.status).toBe(401);
    } finally {
      service.child.kill("SIGTERM");
      await once(service.child, "exit");
    }
    expect([urlHostOf("::"), urlHostOf("::1"), urlHostOf("[::1]"), urlHostOf("gateway.internal")]).toEqual([
      "localhost",
      "[::1]",
      "[::1]",
      "gateway.internal",
    ]);
  }, 120_000);

  it("given the embedded database, then it names the secrets and signing key files and prints a fresh sign-in link", () => {
    const lines = startBannerLines({
      baseUrl: "http://127.0.0.1:8080/llm/v1",
      secrets: {
        kind: "file",
        path: "/srv/app/.data/secrets.json",
        ledgerSigningKeyPath: "/srv/app/.data/ledger-signing-key",
      },
      demoSignInCode: "code-123",
      adminApiOn: true,
    });
    expect(lines).toContain("  sign in       http://127.0.0.1:8080/console/sign-in?code=code-123");
    expect(lines.join("\n")).toContain("secrets       /srv/app/.data/secrets.json (admin token");
    // The signing key lives apart from secrets.json: a backup of the banner's files keeps both.
    expect(lines.join("\n")).toContain("/srv/app/.data/ledger-signing-key (ledger signing key)");
  });

  it("given no ADMIN_TOKEN, then it says the admin API is off and what opens it, not how to mint a link with a token there is none of", () => {
    const lines = startBannerLines({
      baseUrl: "http://127.0.0.1:8080/llm/v1",
      secrets: { kind: "environment" },
      demoSignInCode: undefined,
      adminApiOn: false,
    });
    expect(lines).toContain(
      "  admin API     off: set ADMIN_TOKEN to open /admin (sessions, keys, credit, sign-in links)",
    );
    expect(lines.join("\n")).not.toContain("a new link");
  });
});

describe("a port in use", () => {
  it("stops the start with one line naming PORT and a non-zero exit, no stack trace", async () => {
    // Given: the port is taken
    const taken = createServer();
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    const port = (taken.address() as { port: number }).port;
    try {
      // When
      const child = spawn(process.execPath, serviceEntryArgs, {
        env: environmentFor(port),
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
      const [code] = (await once(child, "exit")) as [number | null];

      // Then
      expect(code).toBe(2);
      expect(stderr.trim()).toBe(
        `invalid configuration: PORT ${port} is in use on 127.0.0.1; set PORT to a free port`,
      );
    } finally {
      taken.close();
    }
  }, 120_000);
});

describe("a HOST that is no address of this machine", () => {
  it.each([
    [
      "a name that does not resolve",
      "no-such-host.invalid",
      "invalid configuration: HOST no-such-host.invalid does not resolve to an address; set HOST to an address of this machine (127.0.0.1, or 0.0.0.0 for all)",
    ],
    [
      "an address of another machine",
      "192.0.2.1",
      "invalid configuration: HOST 192.0.2.1 is not an address of this machine; set HOST to one (127.0.0.1, or 0.0.0.0 for all)",
    ],
  ])(
    "given %s, then the start stops with one line naming HOST and exit 2",
    async (_case, host, line) => {
      // When
      const child = spawn(process.execPath, serviceEntryArgs, {
        env: environmentFor(0, host),
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
      const [code] = (await once(child, "exit")) as [number | null];

      // Then
      expect(code).toBe(2);
      expect(stderr.trim()).toBe(line);
    },
    120_000,
  );
});
