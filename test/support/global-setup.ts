import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";
import { startTestPostgres } from "../../bench/support/postgres-server";
import { buildConsoleIfStale } from "../../console/build-console";
import { createMigratedTemplate } from "./database";

/**
 * Uses DATABASE_URL when set (and fails, never skips, when it is unreachable); otherwise starts embedded
 * PostgreSQL once for the whole run. Each test file then creates its own database on that server.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The browser tests drive the console the gateway serves: build it first when missing or stale.
  await buildConsoleIfStale();
  // The service and ledger processes tests start run the bundles the image runs (built-entries.ts).
  await promisify(execFile)("npm", ["run", "--silent", "build"]);
  const server = await startTestPostgres();
  project.provide("postgresServerUrl", server.url);
  const template = await createMigratedTemplate(server.url);
  project.provide("migratedTemplate", template.name);
  return async () => {
    await template.drop();
    await server.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresServerUrl: string;
    /** The database `createTestDatabase(label, { migrated: true })` copies. */
    migratedTemplate: string;
  }
}
