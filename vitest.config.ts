import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Test files share one PostgreSQL server; each file gets its own database (test/support/database.ts).
    fileParallelism: true,
    maxWorkers: 2,
  },
});
