import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * The members of each organization and their roles (C14). A member appears when granted a role or when
 * issuing one of the organization's keys; the first member an organization sees is its owner, so on a
 * ledger written before roles existed the member who issued its first key owns it. A grant replaces the
 * member's role; an issuance never changes a role. Also each organization key's issuer, so a member's own
 * activity can be told from the others'.
 */

type OrganizationRow = { organization_id: string; first_member_user_id: string };

export const organizationsTable = defineTable<OrganizationRow>({
  name: "projection_organizations",
  columns: { organization_id: "text", first_member_user_id: "text" },
  primaryKey: ["organization_id"],
});

type MemberRow = { organization_id: string; user_id: string; role: string; member_since: string };

export const organizationMembersTable = defineTable<MemberRow>({
  name: "projection_organization_members",
  columns: { organization_id: "text", user_id: "text", role: "text", member_since: "timestamptz" },
  primaryKey: ["organization_id", "user_id"],
});

type KeyIssuerRow = { key_id: string; organization_id: string; issued_by_user_id: string };

export const organizationKeyIssuersTable = defineTable<KeyIssuerRow>({
  name: "projection_organization_key_issuers",
  columns: { key_id: "text", organization_id: "text", issued_by_user_id: "text" },
  primaryKey: ["key_id"],
  indexes: [
    "CREATE INDEX IF NOT EXISTS projection_organization_key_issuers_issuer ON projection_organization_key_issuers (organization_id, issued_by_user_id)",
  ],
});

type Handled = RecordedEventOf<"ApiKeyIssued" | "OrganizationRoleGranted">;

/** A chunk's appearances of members: issuers of organization keys (no role) and grantees (their role). */
const appearances = `
  SELECT owner_id AS organization_id, issued_by_user_id AS user_id, NULL::text AS role,
         occurred_at, transaction_order, position
  FROM ${otherEventRows.table} WHERE type = 'ApiKeyIssued' AND owner_kind = 'organization'
  UNION ALL
  SELECT organization_id, user_id, role, occurred_at, transaction_order, position
  FROM ${otherEventRows.table} WHERE type = 'OrganizationRoleGranted'`;

export const organizationMembersProjection: ProjectionDefinition = {
  name: "organization-members",
  version: 1,
  handles: new Set(["ApiKeyIssued", "OrganizationRoleGranted"]),
  tables: [organizationsTable, organizationMembersTable, organizationKeyIssuersTable],
  evolve(rows, recorded) {
    const event = recorded as Handled;
    switch (event.type) {
      case "ApiKeyIssued": {
        if (event.data.owner.kind !== "organization") return;
        const organizationId = event.data.owner.id;
        const userId = event.data.issuedByUserId;
        rows.put(organizationKeyIssuersTable, {
          key_id: event.data.keyId,
          organization_id: organizationId,
          issued_by_user_id: userId,
        });
        const first = rows.get(organizationsTable, { organization_id: organizationId }) === undefined;
        if (first)
          rows.put(organizationsTable, { organization_id: organizationId, first_member_user_id: userId });
        if (rows.get(organizationMembersTable, { organization_id: organizationId, user_id: userId })) return;
        rows.put(organizationMembersTable, {
          organization_id: organizationId,
          user_id: userId,
          role: first ? "owner" : "member",
          member_since: event.metadata.occurredAt,
        });
        return;
      }
      case "OrganizationRoleGranted": {
        const { organizationId, userId, role } = event.data;
        if (!rows.get(organizationsTable, { organization_id: organizationId }))
          rows.put(organizationsTable, { organization_id: organizationId, first_member_user_id: userId });
        const member = rows.get(organizationMembersTable, {
          organization_id: organizationId,
          user_id: userId,
        });
        rows.put(organizationMembersTable, {
          organization_id: organizationId,
          user_id: userId,
          role,
          member_since: member?.member_since ?? event.metadata.occurredAt,
        });
        return;
      }
      default: {
        const unreachable: never = event;
        throw new Error(`unhandled ${(unreachable as Handled).type}`);
      }
    }
  },
  // Per chunk, in the log's order: the first appearance names an organization's first member (an earlier
  // chunk's stays); a member granted in the chunk takes the chunk's last grant; a member only issuing keys
  // is added, as owner when first, unless already there. The tables in their order, the order a rebuild's
  // swap locks them in (a live batch never waits on it holding one it wants).
  sqlFold: {
    keyed: [organizationsTable, organizationMembersTable, organizationKeyIssuersTable],
    statements: (into) => [
      `INSERT INTO ${into(organizationsTable)} (organization_id, first_member_user_id)
       SELECT DISTINCT ON (organization_id) organization_id, user_id FROM (${appearances}) appearance
       ORDER BY organization_id, transaction_order, position
       ON CONFLICT (organization_id) DO NOTHING`,
      `INSERT INTO ${into(organizationMembersTable)} AS stored (organization_id, user_id, role, member_since)
       SELECT DISTINCT ON (granted.organization_id, granted.user_id) granted.organization_id, granted.user_id,
         granted.role, first.occurred_at
       FROM (${appearances}) granted
       JOIN LATERAL (SELECT occurred_at FROM (${appearances}) seen
                     WHERE seen.organization_id = granted.organization_id AND seen.user_id = granted.user_id
                     ORDER BY transaction_order, position LIMIT 1) first ON true
       WHERE granted.role IS NOT NULL
       ORDER BY granted.organization_id, granted.user_id, granted.transaction_order DESC, granted.position DESC
       ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role`,
      `INSERT INTO ${into(organizationMembersTable)} (organization_id, user_id, role, member_since)
       SELECT DISTINCT ON (issued.organization_id, issued.user_id) issued.organization_id, issued.user_id,
         CASE WHEN organization.first_member_user_id = issued.user_id THEN 'owner' ELSE 'member' END,
         issued.occurred_at
       FROM (${appearances}) issued
       JOIN ${into(organizationsTable)} organization ON organization.organization_id = issued.organization_id
       WHERE issued.role IS NULL
       ORDER BY issued.organization_id, issued.user_id, issued.transaction_order, issued.position
       ON CONFLICT (organization_id, user_id) DO NOTHING`,
      `INSERT INTO ${into(organizationKeyIssuersTable)} AS stored (key_id, organization_id, issued_by_user_id)
       SELECT DISTINCT ON (key_id) key_id, owner_id, issued_by_user_id FROM ${otherEventRows.table}
       WHERE type = 'ApiKeyIssued' AND owner_kind = 'organization'
       ORDER BY key_id, transaction_order DESC, position DESC
       ON CONFLICT (key_id) DO UPDATE SET organization_id = excluded.organization_id,
         issued_by_user_id = excluded.issued_by_user_id`,
    ],
  },
};
