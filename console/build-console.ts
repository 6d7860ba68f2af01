import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Builds the web console into console/dist when the build is missing or stale: `npm start` (prestart) and the
 * test suite (global setup) run it, so a fresh clone needs only `npm install`. Stale means the hash of the
 * console's sources, its Vite config and the lockfile differs from the one written beside the last build;
 * an unchanged console costs one hash of a few files.
 */

const consoleDirectory = path.dirname(fileURLToPath(import.meta.url));
const distDirectory = path.join(consoleDirectory, "dist");
const stampFile = path.join(distDirectory, ".build-hash");
const inputFilesMax = 1_000;

function inputFiles(): string[] {
  const files = [
    path.join(consoleDirectory, "index.html"),
    path.join(consoleDirectory, "vite.config.ts"),
    path.join(consoleDirectory, "..", "package-lock.json"),
  ];
  const pending = [path.join(consoleDirectory, "src")];
  while (pending.length > 0) {
    const directory = pending.pop()!;
    for (const entry of readdirSync(directory).sort()) {
      const full = path.join(directory, entry);
      if (statSync(full).isDirectory()) pending.push(full);
      else files.push(full);
      if (files.length > inputFilesMax) throw new Error(`console/src holds more than ${inputFilesMax} files`);
    }
  }
  return files.sort();
}

export function consoleSourceHash(): string {
  const hash = createHash("sha256");
  for (const file of inputFiles()) {
    hash.update(path.relative(consoleDirectory, file));
    hash.update("\0");
    hash.update(readFileSync(file));
    hash.update("\0");
  }
  return hash.digest("hex");
}

export function consoleBuildIsCurrent(): boolean {
  if (!existsSync(path.join(distDirectory, "index.html")) || !existsSync(stampFile)) return false;
  return readFileSync(stampFile, "utf8").trim() === consoleSourceHash();
}

/** Builds when needed; resolves with whether it built. */
export async function buildConsoleIfStale(options: { force?: boolean } = {}): Promise<boolean> {
  if (!options.force && consoleBuildIsCurrent()) return false;
  const hash = consoleSourceHash();
  const { build } = await import("vite");
  await build({ configFile: path.join(consoleDirectory, "vite.config.ts"), logLevel: "warn" });
  writeFileSync(stampFile, `${hash}\n`);
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  buildConsoleIfStale({ force: process.argv.includes("--force") })
    .then((built) => {
      if (built) process.stdout.write(`web console built in ${Date.now() - started} ms (console/dist)\n`);
    })
    .catch((error: unknown) => {
      process.stderr.write(`building the web console failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    });
}
