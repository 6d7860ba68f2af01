import { randomUUID } from "node:crypto";
import { balancesProjection } from "../projections/balances";
import { localLedgerSigningKeyFile, localSecretsFile } from "./database/local-data";
import { demoCreditReference, demoKeyDescription } from "./kernel/system-texts";
import { formatWonForPeople } from "./kernel/won-text";
import { WrongExpectedVersionError } from "./ledger/store/event-store";
import type { ServiceParts } from "./service";

/** First embedded start: a demo user with ₩10,000 and a key, so a newcomer can `curl` at once. */

const demoUserId = "demo";
const demoCreditWon = "10000";
const demoSessionTtlSeconds = 30 * 24 * 60 * 60;

/**
 * Seeds the demo account unless its account stream exists (an earlier start seeded it), and answers what the
 * banner shows; undefined when it was there already. Decided by the log, not by whether the secrets file was
 * just written: a first start that failed before this point (a port in use) leaves the file, not the demo.
 */
export async function seedDemoAccountOnce(
  service: ServiceParts,
): Promise<{ apiKey: string; sessionToken: string; consoleSignInCode: string } | undefined> {
  const session = { userId: demoUserId, organizationId: null };
  const appended = await service.ledger.store
    .append({
      streamId: `account-user-${demoUserId}`,
      expectedVersion: "no-stream",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "CreditToppedUp",
            data: {
              account: { kind: "user", id: demoUserId },
              amountWon: demoCreditWon,
              reference: demoCreditReference,
            },
            metadata: { actor: "system:first-start", occurredAt: new Date().toISOString() },
          },
        },
      ],
    })
    .catch((error: unknown) => {
      if (error instanceof WrongExpectedVersionError) return undefined;
      throw error;
    });
  if (!appended) return undefined;
  await service.waiter.waitFor(appended.position, [balancesProjection.name], 30_000);
  const issued = await service.keys.issue(
    session,
    { name: "demo", description: demoKeyDescription, isOrganization: false },
    "first-start",
  );
  const { token } = await service.sessions.mint(session, demoSessionTtlSeconds);
  const consoleSignInCode = await service.consoleAuth.mintSignInCode(session);
  return { apiKey: issued.key, sessionToken: token, consoleSignInCode };
}

export interface FirstStartBannerDetails {
  baseUrl: string;
  apiKey: string;
  sessionToken: string;
  consoleSignInCode: string;
  adminToken: string | undefined;
}

export function printFirstStartBanner(details: FirstStartBannerDetails): void {
  process.stdout.write(`${firstStartBannerLines(details).join("\n")}\n`);
}

/** What the first embedded start prints, once; amounts as a person reads them ("₩10,000", as the README). */
export function firstStartBannerLines(details: FirstStartBannerDetails): string[] {
  const origin = details.baseUrl.replace(/\/llm\/v1$/, "");
  return [
    "",
    "won-gateway is running on embedded PostgreSQL. Shown once — keep what you need:",
    `  base URL        ${details.baseUrl}`,
    `  demo API key    ${details.apiKey}   (user "demo", ${formatWonForPeople(demoCreditWon)})`,
    `  session token   ${details.sessionToken}`,
    `  admin token     ${details.adminToken ?? "(admin API off)"}`,
    `  web console     ${origin}/console/`,
    `  sign in         ${origin}/console/sign-in?code=${details.consoleSignInCode}`,
    '                  (signs "demo" in once, within 15 minutes; each later start prints a fresh link)',
    `  secrets         ${localSecretsFile} (admin token, session secret, key pepper)`,
    `                  ${localLedgerSigningKeyFile} (ledger signing key)`,
    // The link above dies in minutes; the later starts' banner says the same (start-banner.ts).
    `  a new link      POST ${origin}/admin/sign-in-links {"userId":"…"} with the admin token`,
    "",
    `  curl ${details.baseUrl}/chat/completions -H "Authorization: Bearer ${details.apiKey}" \\`,
    `    -H "Content-Type: application/json" -d '{"model":"alpha-5.4-mini","messages":[{"role":"user","content":"Hello"}]}'`,
    "",
  ];
}
