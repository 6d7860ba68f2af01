import { createHash } from "node:crypto";
import type { AccountReference, LedgerEvent } from "../../src/ledger/events";
import type { StreamAppend } from "../../src/ledger/store/event-store";

/**
 * Accounts with API keys, as the events that make them, for the admission cache's benchmark and tests.
 * Ids and hashes are derived from names, so a run is the same each time.
 */

export interface FixtureKey {
  keyId: string;
  keyHash: string;
  owner: AccountReference;
}

const occurredAt = "2026-11-20T03:00:00.000Z";

function hexOf(name: string): string {
  return createHash("sha256").update(name).digest("hex");
}

/** A version-4 UUID whose bits come from `name`. */
function uuidOf(name: string): string {
  const hex = hexOf(name);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** `keysPerAccount` keys on each of `accountCount` user accounts named `<prefix>-<n>`. */
export function keysOfAccounts(prefix: string, accountCount: number, keysPerAccount: number): FixtureKey[] {
  const keys: FixtureKey[] = [];
  for (let account = 0; account < accountCount; account += 1) {
    const owner: AccountReference = { kind: "user", id: `${prefix}-${account}` };
    for (let key = 0; key < keysPerAccount; key += 1) {
      const name = `${owner.id}/key-${key}`;
      keys.push({ keyId: uuidOf(name), keyHash: hexOf(name), owner });
    }
  }
  return keys;
}

function appendOf(streamId: string, event: Omit<LedgerEvent, "metadata">, eventName: string): StreamAppend {
  return {
    streamId,
    expectedVersion: "any",
    events: [
      {
        eventId: uuidOf(eventName),
        event: { ...event, metadata: { actor: "admin", occurredAt } } as LedgerEvent,
      },
    ],
  };
}

export function keyIssued(key: FixtureKey): StreamAppend {
  const data = {
    keyId: key.keyId,
    owner: key.owner,
    issuedByUserId: key.owner.id,
    name: key.keyId,
    description: "",
    keyHash: key.keyHash,
    keyPreview: "svc_abcd…wxyz",
  };
  return appendOf(`apikey-${key.keyId}`, { type: "ApiKeyIssued", data }, `${key.keyId}/issued`);
}

export function keyStatusChanged(key: FixtureKey, status: 0 | 1, reference: string): StreamAppend {
  const data = { keyId: key.keyId, owner: key.owner, status };
  return appendOf(`apikey-${key.keyId}`, { type: "ApiKeyStatusChanged", data }, `${key.keyId}/${reference}`);
}

/** `reference` names the top-up: the same reference is the same event (its id derives from it). */
export function toppedUp(account: AccountReference, amountWon: string, reference: string): StreamAppend {
  const data = { account, amountWon, reference };
  return appendOf(
    `account-${account.kind}-${account.id}`,
    { type: "CreditToppedUp", data },
    `${account.kind}:${account.id}/${reference}`,
  );
}
