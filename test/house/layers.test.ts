import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The layers are a fact the build checks (`npm run lint` runs dependency-cruiser with
 * .dependency-cruiser.cjs): an import from a lower layer to a higher one, two folders importing each
 * other, or service code importing test code fails the lint. Shown on a small tree planted for the purpose,
 * with the repository's own rules, and on the repository itself, which passes.
 */

const run = promisify(execFile);
const repository = path.resolve(import.meta.dirname, "../..");
const depcruise = path.join(repository, "node_modules", ".bin", "depcruise");

async function cruise(directory: string, paths: readonly string[]) {
  try {
    const { stdout } = await run(
      depcruise,
      [...paths, "--config", ".dependency-cruiser.cjs", "--output-type", "err"],
      {
        cwd: directory,
      },
    );
    return { exitCode: 0, output: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { exitCode: failed.code, output: failed.stdout };
  }
}

describe("the layers", () => {
  let planted: string;

  beforeAll(async () => {
    planted = await mkdtemp(path.join(tmpdir(), "layers-"));
    await cp(path.join(repository, ".dependency-cruiser.cjs"), path.join(planted, ".dependency-cruiser.cjs"));
    await writeFile(
      path.join(planted, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { module: "ESNext", moduleResolution: "Bundler", strict: true } }),
    );
    const files: Record<string, string> = {
      // The kernel reaching up into the gateway: an upward import.
      "src/kernel/money.ts":
        'import { apiErrors } from "../gateway/api-error";\nexport const money = apiErrors;\n',
      "src/gateway/api-error.ts": "export const apiErrors = {};\n",
      // Billing and keys importing each other: a cycle between two folders of the domain.
      "src/billing/charge.ts": 'import { key } from "../keys/key";\nexport const charge = key;\n',
      "src/keys/key.ts": 'import { charge } from "../billing/charge";\nexport const key = () => charge;\n',
      // Service code importing a test helper.
      "src/ledger/store.ts":
        'import { helper } from "../../test/support/helper";\nexport const store = helper;\n',
      "test/support/helper.ts": "export const helper = 1;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(planted, file)), { recursive: true });
      await writeFile(path.join(planted, file), text);
    }
  });
  afterAll(async () => {
    await rm(planted, { recursive: true, force: true });
  });

  it("given a planted upward import, folder cycle and test import, then the lint fails naming each rule", async () => {
    const { exitCode, output } = await cruise(planted, ["src"]);

    expect(exitCode).not.toBe(0);
    expect(output).toContain("no-import-above-kernel: src/kernel/money.ts → src/gateway/api-error.ts");
    // Of the two folders' imports, the one against the layers' order is the upward one.
    expect(output).toContain("no-import-above-keys: src/keys/key.ts → src/billing/charge.ts");
    expect(output).toContain("no-test-code-outside-tests: src/ledger/store.ts → test/support/helper.ts");
  }, 60_000);

  it("given the repository, then the lint passes", async () => {
    const { exitCode, output } = await cruise(repository, ["src", "projections", "workers", "bench"]);
    expect(output).toContain("no dependency violations found");
    expect(exitCode).toBe(0);
  }, 120_000);
});
