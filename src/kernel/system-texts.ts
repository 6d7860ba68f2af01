/**
 * Texts the service itself writes into the ledger (a top-up's reference, a key's name or description), as
 * opposed to what a person typed. Events keep them in English for good; the console shows them in its
 * language by looking these exact strings up (console/src/lib/system-text.ts), so they live here, free of
 * any server dependency, for both sides to share.
 */

/** The reference of the demo user's credit at the first embedded start. */
export const demoCreditReference = "demo credit at first start";
/** The description of the demo user's key at the first embedded start. */
export const demoKeyDescription = "created at first start";
/** The name of every playground key the console issues. */
export const playgroundKeyName = "Console playground";

const playgroundDescriptionPattern =
  /^Issued by the web console for (.+)'s playground; replaced each time it opens$/;

/** Names the user, so that members of one organization never replace each other's key. */
export function playgroundKeyDescriptionOf(userId: string): string {
  return `Issued by the web console for ${userId}'s playground; replaced each time it opens`;
}

/** The user a playground key's description names; undefined for any other text. */
export function playgroundKeyUserOf(description: string): string | undefined {
  return playgroundDescriptionPattern.exec(description)?.[1];
}
