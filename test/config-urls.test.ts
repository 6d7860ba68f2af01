import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";
import { serviceEntryArgs } from "./support/built-entries";

/**
 * The URL variables: one that no client could parse stops the start with one line naming it (C2), rather
 * than a bare "Invalid URL" from whichever part first uses it — or, for Redis, a process that starts and
 * fails to reach its queue forever.
 */

describe("URL variables", () => {
  it.each([
    ["DATABASE_URL", "postgres://gateway:secret@127.0.0.1:notaport/gateway"],
    ["REDIS_URL", "redis://127.0.0.1:notaport"],
    ["KOREAEXIM_URL", "https://oapi.koreaexim.go.kr:notaport/exchange"],
    ["ALPHA_BASE_URL", "https://api.alpha.example:notaport/v1"],
    ["OIDC_ISSUER", "https://issuer.example:notaport"],
  ])("given %s that is no URL, when the configuration loads, then it is refused by name", (name, value) => {
    const client = name === "OIDC_ISSUER" ? { OIDC_CLIENT_ID: "console" } : {};
    expect(() => loadConfig({ [name]: value, ...client })).toThrow(
      new RegExp(`^invalid configuration: ${name} must be a URL`),
    );
  });

  it("given a DATABASE_URL naming a Unix socket and no host, as pg reads it, then it is taken", () => {
    const url = "postgres://gateway@/gateway?host=/var/run/postgresql";
    expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
  });

  it("given a REDIS_URL that is no URL, when a worker starts, then it stops at once with one line and exit code 2", () => {
    const started = spawnSync(process.execPath, [...serviceEntryArgs, "--role=worker"], {
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: "postgres://gateway@127.0.0.1:1/gateway",
        REDIS_URL: "redis://:secret@127.0.0.1:notaport",
        SESSION_SECRET: "s".repeat(32),
        KEY_PEPPER: "p".repeat(32),
      },
      encoding: "utf8",
      timeout: 60_000,
    });

    expect(started.status).toBe(2);
    expect(started.stdout).toBe("");
    expect(started.stderr).toBe(
      "invalid configuration: REDIS_URL must be a URL starting with redis:// or rediss://\n",
    );
  }, 70_000);
});
