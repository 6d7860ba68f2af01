import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/**
 * Debian's Chromium driven by playwright-core (no browser download): headless, a fresh profile per run,
 * nothing reaching out to the network but the gateway under test.
 */

export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const artifactsDirectory = path.resolve(import.meta.dirname, "../../../test-artifacts/console");

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * `args` are Chromium's own switches beside ours, e.g. `--host-resolver-rules=MAP console.test 127.0.0.1` to
 * open the gateway under a host name that is not a secure context over plain HTTP; such an origin has no
 * clipboard to grant (`clipboard: false`).
 */
export async function launchBrowser(options: {
  locale: string;
  origin: string;
  args?: readonly string[];
  clipboard?: boolean;
}): Promise<Browser> {
  const clipboard = options.clipboard ?? true;
  const profile = await mkdtemp(path.join(tmpdir(), "console-chromium-"));
  const downloads = path.join(profile, "downloads");
  await mkdir(downloads);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      ...(options.args ?? []),
    ],
    locale: options.locale,
    timezoneId: "UTC",
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
    downloadsPath: downloads,
    permissions: clipboard ? ["clipboard-read", "clipboard-write"] : [],
  });
  if (clipboard) {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: options.origin });
  }
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

const axeSource = readFile(
  path.resolve(import.meta.dirname, "../../../node_modules/axe-core/axe.min.js"),
  "utf8",
);

/**
 * axe-core run in the page: the serious and critical WCAG 2 A/AA violations, as readable lines. Evaluated
 * through the debugging protocol, as a test's own code, rather than added as a script tag, which the
 * console's Content-Security-Policy refuses as any page's injected script.
 */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>("typeof axe !== 'undefined'"))) await page.evaluate(await axeSource);
  // A string, evaluated in the page: the test program is type-checked without the DOM library.
  const violations = await page.evaluate<AxeViolation[]>(
    `axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } })
       .then((result) => result.violations)`,
  );
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes
          .map((node) => node.target.join(" "))
          .join(", ")}`,
    );
}

/** Whether the browser tests keep screenshots for a person to look at; nothing asserts on them. */
const screenshotsKept = process.env.CONSOLE_SCREENSHOTS === "1";

/**
 * The whole page by default; `fullPage: false` for what a screen of the viewport's size shows first. Taken
 * only with `CONSOLE_SCREENSHOTS=1`: encoding them took a sixth of the layout tests' time and Chromium's CPU.
 */
export async function screenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<string | undefined> {
  if (!screenshotsKept) return undefined;
  await mkdir(artifactsDirectory, { recursive: true });
  const file = path.join(artifactsDirectory, `${name}.png`);
  await page.screenshot({ path: file, fullPage: options.fullPage ?? true });
  return file;
}
