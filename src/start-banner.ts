import type { ServiceParts } from "./service";

/**
 * What every start of a process serving the API prints, first or not: where to point a client, where the
 * console is, and where the secrets that open it live. On the embedded database (a single-machine start,
 * whose `demo` user exists) it also prints a fresh one-time sign-in link, so getting back into the console
 * after a restart needs no curl.
 */

export interface StartBannerDetails {
  baseUrl: string;
  /** Where the admin token, session secret, key pepper and ledger signing key come from. */
  secrets: { kind: "file"; path: string; ledgerSigningKeyPath: string } | { kind: "environment" };
  /** A one-time sign-in link's code for the demo user, when there is one. */
  demoSignInCode: string | undefined;
  /** Whether ADMIN_TOKEN is set: without it `/admin` is not served, and a new link cannot be minted. */
  adminApiOn: boolean;
}

export function startBannerLines(details: StartBannerDetails): string[] {
  const origin = details.baseUrl.replace(/\/llm\/v1$/, "");
  const secrets =
    details.secrets.kind === "file"
      ? [
          `${details.secrets.path} (admin token, session secret, key pepper)`,
          `${details.secrets.ledgerSigningKeyPath} (ledger signing key); unless set in the environment`,
        ]
      : ["the environment: ADMIN_TOKEN, SESSION_SECRET, KEY_PEPPER, LEDGER_SIGNING_KEY"];
  return [
    "",
    "won-gateway is running.",
    `  base URL      ${details.baseUrl}   (OpenAI-style clients: baseURL = this, apiKey = svc_…)`,
    `  web console   ${origin}/console/`,
    ...(details.demoSignInCode === undefined
      ? []
      : [
          `  sign in       ${origin}/console/sign-in?code=${details.demoSignInCode}`,
          '                (signs "demo" in once, within 15 minutes)',
        ]),
    `  secrets       ${secrets[0]}`,
    ...secrets.slice(1).map((line) => `                ${line}`),
    details.adminApiOn
      ? `  a new link    POST ${origin}/admin/sign-in-links {"userId":"…"} with the admin token`
      : "  admin API     off: set ADMIN_TOKEN to open /admin (sessions, keys, credit, sign-in links)",
    "",
  ];
}

export function printStartBanner(details: StartBannerDetails): void {
  process.stdout.write(`${startBannerLines(details).join("\n")}\n`);
}

/** A fresh sign-in code for the demo user. */
export function demoSignInCodeOf(service: Pick<ServiceParts, "consoleAuth">): Promise<string> {
  return service.consoleAuth.mintSignInCode({ userId: "demo", organizationId: null });
}
