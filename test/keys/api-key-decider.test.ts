import { describe, expect, it } from "vitest";
import { type ApiKeyCommand, decideApiKey, foldApiKey } from "../../src/keys/api-key-decider";
import type { ApiKeyLimits, LedgerEvent } from "../../src/ledger/events";
import type { RecordedEvent } from "../../src/ledger/store/event-store";

/** The key aggregate as given/when/then: given its stream, when a command, then the event or not found. */

const keyId = "3e9d6f4b-5c7a-4e8d-9f0a-b1c2d3e4f5a6";
const owner = { kind: "organization", id: "acme" } as const;
const occurredAt = "2026-11-20T03:00:00.000Z";
const limits: ApiKeyLimits = {
  monthlySpendLimitWon: "50000",
  totalSpendLimitWon: null,
  rateLimitRequestsPerMinute: 60,
};

function recorded(events: Omit<LedgerEvent, "metadata">[]): RecordedEvent[] {
  return events.map(
    (event, streamVersion) =>
      ({
        ...event,
        metadata: { actor: "user:carol", occurredAt },
        eventId: `00000000-0000-4000-8000-00000000000${streamVersion}`,
        streamId: `apikey-${keyId}`,
        streamVersion,
        position: { commit: BigInt(streamVersion + 1), prepare: BigInt(streamVersion + 1) },
        recordedAt: new Date(occurredAt),
      }) as RecordedEvent,
  );
}

const issued: Omit<LedgerEvent, "metadata"> = {
  type: "ApiKeyIssued",
  data: {
    keyId,
    owner,
    issuedByUserId: "carol",
    name: "shared",
    description: "",
    keyHash: "a".repeat(64),
    keyPreview: "svc_abcd…wxyz",
  },
};
const setLimits: ApiKeyCommand = { type: "SetApiKeyLimits", keyId, limits };
const memberOfAcme = { owners: [{ kind: "user", id: "dave" } as const, owner] };

describe("the API key aggregate and its limits", () => {
  it("given an issued key, when a member of its organization sets limits, then ApiKeyLimitsSet at the next version", () => {
    expect(decideApiKey(foldApiKey(recorded([issued])), setLimits, memberOfAcme)).toEqual({
      outcome: "append",
      event: { type: "ApiKeyLimitsSet", data: { keyId, owner, ...limits } },
      expectedVersion: 0,
    });
  });

  it("given limits already set, when a status change follows, then it expects the version after the limits", () => {
    const state = foldApiKey(
      recorded([issued, { type: "ApiKeyLimitsSet", data: { keyId, owner, ...limits } }]),
    );
    expect(decideApiKey(state, { type: "ChangeApiKeyStatus", keyId, status: 0 }, memberOfAcme)).toMatchObject(
      { outcome: "append", expectedVersion: 1 },
    );
  });

  it("given another organization's key, when its limits are set, then not found", () => {
    const stranger = {
      owners: [{ kind: "user", id: "eve" } as const, { kind: "organization", id: "globex" } as const],
    };
    expect(decideApiKey(foldApiKey(recorded([issued])), setLimits, stranger)).toEqual({
      outcome: "not-found",
    });
  });

  it("given an organization's key, when a user of the same id sets its limits, then not found", () => {
    // User ids and organization ids are both the identity provider's text: nothing keeps them apart.
    const namesake = { owners: [{ kind: "user", id: owner.id } as const] };
    expect(decideApiKey(foldApiKey(recorded([issued])), setLimits, namesake)).toEqual({
      outcome: "not-found",
    });
  });

  it("given a deleted key, when even an admin sets its limits, then not found", () => {
    const deleted = recorded([issued, { type: "ApiKeyDeleted", data: { keyId, owner } }]);
    expect(decideApiKey(foldApiKey(deleted), setLimits, { admin: true })).toEqual({ outcome: "not-found" });
  });

  it("given any owner's key, when an admin sets its limits, then the event keeps the key's owner", () => {
    expect(decideApiKey(foldApiKey(recorded([issued])), setLimits, { admin: true })).toMatchObject({
      outcome: "append",
      event: { data: { owner } },
    });
  });
});
