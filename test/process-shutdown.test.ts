import { once } from "node:events";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database";
import {
  gatewayOriginOf,
  provisionKeyWithCredit,
  type ServiceProcess,
  spawnService,
} from "./support/service-process";
import { removeDeploymentQueueData } from "./workers/queue-test-support";

/**
 * A clean stop (C11) of a real `npm start`: SIGTERM or SIGINT to its whole process group (as a terminal's
 * Ctrl-C) while a stream is in flight. The stream still ends with `data: [DONE]`, new connections are
 * refused, the usage is in the ledger, the process says `stopped` and exits 0 — through npm, so the signal
 * reached node and npm reports node's exit.
 */

const adminToken = "shutdown-admin-token-0123456789abcdef0123456789";

async function startNpm(database: TestDatabase): Promise<ServiceProcess & { url: string }> {
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    SESSION_SECRET: "shutdown-session-secret-0123456789abcdef0123456789",
    KEY_PEPPER: "shutdown-key-pepper-0123456789abcdef0123456789ab",
    ADMIN_TOKEN: adminToken,
    // A port the system picks: see gatewayOriginOf.
    PORT: "0",
    HOST: "127.0.0.1",
    // A stream of 12 to 60 tokens lasts about 1 to 3 s.
    SIMULATOR_TOKENS_PER_SECOND: "20",
    LOG_LEVEL: "info",
  };
  // Its own process group, so the test can signal the group as a terminal would.
  const service = await spawnService("npm", ["start"], environment, {
    readyLine: "gateway listening",
    detached: true,
  });
  return { ...service, url: gatewayOriginOf(service) };
}

const issueKeyWithCredit = (url: string) => provisionKeyWithCredit(url, adminToken, "stopper", "1000");

let database: TestDatabase | undefined;
let started: (ServiceProcess & { url: string }) | undefined;

afterEach(async () => {
  // Only the process group this test started, by its id, and only if it is still there.
  if (started?.child.pid && started.child.exitCode === null) process.kill(-started.child.pid, "SIGKILL");
  started = undefined;
  // With REDIS_URL the queues were on the shared Redis, under a prefix named after the ledger's id.
  if (database)
    await removeDeploymentQueueData({ redisUrl: process.env.REDIS_URL, databaseUrl: database.url });
  await database?.drop();
  database = undefined;
});

describe("npm start stops cleanly", () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "on %s to its process group, with a stream in flight",
    async (signal) => {
      // Given: a running `npm start` and a stream under way
      database = await createTestDatabase(`shutdown_${signal.toLowerCase()}`);
      started = await startNpm(database);
      const apiKey = await issueKeyWithCredit(started.url);
      const response = await fetch(`${started.url}/llm/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "alpha-5.4-mini",
          messages: [{ role: "user", content: "Tell me a long story about rivers" }],
          stream: true,
        }),
      });
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let body = decoder.decode((await reader.read()).value);
      expect(body).not.toContain("[DONE]");
      const exited = once(started.child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;

      // When: the signal goes to the whole group, as a terminal's Ctrl-C does
      process.kill(-started.child.pid!, signal);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = await fetch(`${started.url}/llm/v1/models`).then(
        () => false,
        () => true,
      );
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        body += decoder.decode(value, { stream: true });
      }
      const [code] = await exited;

      // Then
      expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
      expect(refused).toBe(true);
      expect(code).toBe(0);
      expect(started.output()).toContain('"msg":"stopped"');
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const usage = await client.query("SELECT 1 FROM ledger_events WHERE type = 'UsageRecorded'");
        expect(usage.rows).toHaveLength(1);
      } finally {
        await client.end();
      }
    },
    90_000,
  );
});
