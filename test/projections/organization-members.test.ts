import { describe, expect, it } from "vitest";
import {
  organizationKeyIssuersTable,
  organizationMembersProjection,
  organizationMembersTable,
} from "../../projections/organization-members";
import type { OrganizationRole } from "../../src/ledger/events";
import { MemoryRows } from "../../src/ledger/projection/projection";
import type { RecordedEvent } from "../../src/ledger/store/event-store";
import { parseLogPosition } from "../../src/ledger/store/log-position";

/** The members projection's fold: who belongs to an organization and in which role (C14). */

let sequence = 0;

function recorded(type: string, data: unknown): RecordedEvent {
  sequence += 1;
  const occurredAt = `2026-11-${String(sequence).padStart(2, "0")}T00:00:00.000Z`;
  return {
    type,
    data,
    metadata: { actor: "user:someone", occurredAt },
    eventId: `00000000-0000-4000-8000-${String(sequence).padStart(12, "0")}`,
    streamId: `stream-${sequence}`,
    streamVersion: 1,
    position: parseLogPosition(`1-${sequence}`),
    recordedAt: new Date(occurredAt),
  } as RecordedEvent;
}

const keyIssued = (organizationId: string, userId: string, keyId: string) =>
  recorded("ApiKeyIssued", {
    keyId,
    owner: { kind: "organization", id: organizationId },
    issuedByUserId: userId,
    name: "k",
    description: "",
    keyHash: "0".repeat(64),
    keyPreview: "svc_…",
  });
const granted = (organizationId: string, userId: string, role: OrganizationRole) =>
  recorded("OrganizationRoleGranted", { organizationId, userId, role });

function fold(events: RecordedEvent[]): MemoryRows {
  const rows = new MemoryRows();
  for (const event of events) organizationMembersProjection.evolve(rows, event);
  return rows;
}

const roleOf = (rows: MemoryRows, organizationId: string, userId: string) =>
  rows.get(organizationMembersTable, { organization_id: organizationId, user_id: userId })?.role;

const keyA = "6f1c2a4e-8d3b-4f5a-9c7e-1b2d3e4f5a6b";
const keyB = "7a2d3b5f-9e4c-4a6b-8d8f-2c3e4f5a6b7c";

describe("the organization members projection", () => {
  it("given keys issued before any grant, then the first issuer is the owner and the next a member", () => {
    const rows = fold([keyIssued("acme", "mina", keyA), keyIssued("acme", "joon", keyB)]);
    expect(roleOf(rows, "acme", "mina")).toBe("owner");
    expect(roleOf(rows, "acme", "joon")).toBe("member");
    expect(rows.get(organizationKeyIssuersTable, { key_id: keyB })).toEqual({
      key_id: keyB,
      organization_id: "acme",
      issued_by_user_id: "joon",
    });
  });

  it("given a grant, then it replaces the role, keeps when the member joined, and a later issuance changes nothing", () => {
    const rows = fold([
      keyIssued("acme", "mina", keyA),
      granted("acme", "joon", "admin"),
      granted("acme", "mina", "member"),
      keyIssued("acme", "mina", keyB),
    ]);
    expect(roleOf(rows, "acme", "joon")).toBe("admin");
    expect(rows.get(organizationMembersTable, { organization_id: "acme", user_id: "mina" })).toMatchObject({
      role: "member",
      member_since: "2026-11-03T00:00:00.000Z",
    });
  });

  it("given a grant first, then its grantee is the first member and a later issuer a member", () => {
    const rows = fold([granted("beta", "sora", "owner"), keyIssued("beta", "hana", keyA)]);
    expect(roleOf(rows, "beta", "sora")).toBe("owner");
    expect(roleOf(rows, "beta", "hana")).toBe("member");
  });

  it("a personal key makes nobody a member", () => {
    const rows = fold([
      recorded("ApiKeyIssued", {
        keyId: keyA,
        owner: { kind: "user", id: "mina" },
        issuedByUserId: "mina",
        name: "k",
        description: "",
        keyHash: "0".repeat(64),
        keyPreview: "svc_…",
      }),
    ]);
    expect(rows.get(organizationKeyIssuersTable, { key_id: keyA })).toBeUndefined();
  });
});
