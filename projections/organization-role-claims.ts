import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * The role the identity provider last claimed for each member of an organization (C14), and when: a later
 * claim replaces an earlier one. Role null: the provider's last word was no role of ours.
 */

type Row = { organization_id: string; user_id: string; role: string | null; claimed_at: string };

export const organizationRoleClaimsTable = defineTable<Row>({
  name: "projection_organization_role_claims",
  columns: { organization_id: "text", user_id: "text", role: "text", claimed_at: "timestamptz" },
  primaryKey: ["organization_id", "user_id"],
});

export const organizationRoleClaimsProjection: ProjectionDefinition = {
  name: "organization-role-claims",
  version: 1,
  handles: new Set(["OrganizationRoleClaimed"]),
  tables: [organizationRoleClaimsTable],
  evolve(rows, recorded) {
    const event = recorded as RecordedEventOf<"OrganizationRoleClaimed">;
    rows.put(organizationRoleClaimsTable, {
      organization_id: event.data.organizationId,
      user_id: event.data.userId,
      role: event.data.role,
      claimed_at: event.metadata.occurredAt,
    });
  },
  // Per chunk, in the log's order: each member's last claim replaces what an earlier chunk left.
  sqlFold: {
    keyed: [organizationRoleClaimsTable],
    statements: (into) => [
      `INSERT INTO ${into(organizationRoleClaimsTable)} AS stored (organization_id, user_id, role, claimed_at)
       SELECT DISTINCT ON (organization_id, user_id) organization_id, user_id, role, occurred_at
       FROM ${otherEventRows.table} WHERE type = 'OrganizationRoleClaimed'
       ORDER BY organization_id, user_id, transaction_order DESC, position DESC
       ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role,
         claimed_at = excluded.claimed_at`,
    ],
  },
};
