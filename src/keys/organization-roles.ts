import { type OrganizationRole, organizationRoles } from "../ledger/events";

/**
 * Who may do what in an organization (C14, docs/api.md "Roles in an organization"): a table of actions and
 * the roles allowed each, and the pure decision of a grant. The service (organization-role-service.ts) reads
 * the members and records the grants.
 */

export { type OrganizationRole, organizationRoles };

export const organizationActions = [
  /** List, issue, activate, deactivate and delete the organization's keys (what C4 gives every session). */
  "manage-keys",
  /** List the members and their roles. */
  "read-members",
  /** PUT/DELETE /llm/apis/{uuid}/limits on the organization's keys (spend, rate, allowed models). */
  "set-key-limits",
  /** PUT /llm/organization/key-defaults. */
  "set-key-defaults",
  /** The organization's activity and usage of keys other members issued. */
  "read-members-activity",
  /** PUT /llm/organization/members/{userId}. */
  "grant-roles",
  /** The organization's alert threshold and webhooks (/llm/alerts, /llm/webhooks), reading them too. */
  "manage-alerts",
] as const;
export type OrganizationAction = (typeof organizationActions)[number];

const everyRole: readonly OrganizationRole[] = organizationRoles;
const ownersAndAdmins: readonly OrganizationRole[] = ["owner", "admin"];

export const rolesAllowed: Record<OrganizationAction, readonly OrganizationRole[]> = {
  "manage-keys": everyRole,
  "read-members": everyRole,
  "set-key-limits": ownersAndAdmins,
  "set-key-defaults": ownersAndAdmins,
  "read-members-activity": ownersAndAdmins,
  "grant-roles": ownersAndAdmins,
  "manage-alerts": ownersAndAdmins,
};

export function mayDo(role: OrganizationRole, action: OrganizationAction): boolean {
  return rolesAllowed[action].includes(role);
}

/** The actions a role may take, for the console to hide the others. */
export function actionsOf(role: OrganizationRole): OrganizationAction[] {
  return organizationActions.filter((action) => mayDo(role, action));
}

export function isOrganizationRole(value: unknown): value is OrganizationRole {
  return typeof value === "string" && (organizationRoles as readonly string[]).includes(value);
}

/**
 * The seam for sign-in by an identity provider: the role its claim gives (when `OIDC_ROLE_CLAIM` is
 * configured and the claim names a role) wins over the grants; without one the granted role holds, and a
 * user granted nothing is a member.
 */
export function effectiveRoleOf(
  granted: OrganizationRole | undefined,
  claimed: OrganizationRole | null | undefined,
): OrganizationRole {
  return claimed ?? granted ?? "member";
}

export type RoleGrantDecision =
  | { outcome: "grant" }
  | { outcome: "unchanged" }
  | { outcome: "refused"; reason: string };

/**
 * Whether `actorRole` may give `target` the role `role`: owners and admins grant; only an owner makes an
 * owner or changes an owner's role; the last owner stays owner. `target` is the target's granted role
 * (undefined: never granted nor seen), `ownerCount` how many members the grants make owners.
 */
export function decideRoleGrant(input: {
  actorRole: OrganizationRole;
  target: OrganizationRole | undefined;
  role: OrganizationRole;
  ownerCount: number;
}): RoleGrantDecision {
  const { actorRole, target, role, ownerCount } = input;
  if (!mayDo(actorRole, "grant-roles"))
    return { outcome: "refused", reason: "Only the organization's owners and admins grant roles" };
  if ((role === "owner" || target === "owner") && actorRole !== "owner")
    return { outcome: "refused", reason: "Only an owner makes owners or changes an owner's role" };
  if (target === role) return { outcome: "unchanged" };
  if (target === "owner" && ownerCount <= 1)
    return {
      outcome: "refused",
      reason: "The organization's last owner stays owner: make another member owner first",
    };
  return { outcome: "grant" };
}
