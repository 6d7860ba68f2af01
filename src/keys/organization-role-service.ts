import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import {
  organizationMembersProjection,
  organizationMembersTable,
  organizationsTable,
} from "../../projections/organization-members";
import {
  organizationRoleClaimsProjection,
  organizationRoleClaimsTable,
} from "../../projections/organization-role-claims";
import type { AuthorizationBasis, EventMetadata } from "../ledger/events";
import type { ProjectionWaiter } from "../ledger/projection/projection-waiter";
import { readBackRecorded } from "../ledger/projection/recorded-not-visible";
import { retryingConflicts, StreamCommands } from "../ledger/store/conflict-retry";
import type { EventStore, RecordedEvent } from "../ledger/store/event-store";
import type { Session } from "../sessions/session-tokens";
import { OrganizationRequiredError } from "./api-key-service";
import { organizationStreamOf } from "./organization-key-defaults";
import {
  actionsOf,
  decideRoleGrant,
  effectiveRoleOf,
  isOrganizationRole,
  mayDo,
  type OrganizationAction,
  type OrganizationRole,
} from "./organization-roles";

/**
 * Roles in an organization (C14): read from the members projection, granted by `OrganizationRoleGranted` on
 * the organization's stream. Each grant is decided on the members as of the stream's last event and appended
 * at that stream version, so two grants at once cannot both pass the last-owner rule.
 */

/**
 * The role an identity provider's claim gives the session (`Session.providerRole`, set by sign-in through
 * OpenID Connect when `OIDC_ROLE_CLAIM` is configured), when it names one of ours; it wins over the grants.
 * A claim naming anything else is ignored, so the grants hold.
 */
function claimedRoleOf(session: Session): OrganizationRole | undefined {
  return isOrganizationRole(session.providerRole) ? session.providerRole : undefined;
}

/**
 * Whether a claim recorded at `recordedAt` is the provider's later word than the one a session carries, made
 * when its token was issued (whole seconds; no `iat`: the earliest).
 */
function isLaterThanSession(recordedAt: Date, session: Session): boolean {
  const carriedAt = session.providerRoleClaimedAt;
  return carriedAt === undefined || Math.floor(recordedAt.getTime() / 1_000) * 1_000 >= carriedAt.getTime();
}

export interface OrganizationMember {
  userId: string;
  role: OrganizationRole;
  memberSince: string;
}

export interface OrganizationMembers {
  organizationId: string;
  data: OrganizationMember[];
}

/** A session's role refused it the action (403/160 at the edge). */
export class OrganizationRoleRefusedError extends Error {
  override readonly name = "OrganizationRoleRefusedError";
}

interface Dependencies {
  pool: Pool;
  store: EventStore;
  waiter: ProjectionWaiter;
  projectionWaitTimeoutMs: number;
  /** The process's turns per stream, shared with ApiKeyService (key defaults are on the same stream). */
  commands?: StreamCommands;
  now?: () => Date;
}

const projections = [organizationMembersProjection.name, organizationRoleClaimsProjection.name];
/** The actor of the grant that makes an organization's first member its owner. */
export const firstMemberActor = "system:organization-roles";

export class OrganizationRoleService {
  private readonly now: () => Date;
  private readonly commands: StreamCommands;

  constructor(private readonly dependencies: Dependencies) {
    this.now = dependencies.now ?? (() => new Date());
    this.commands = dependencies.commands ?? new StreamCommands();
  }

  async members(organizationId: string): Promise<OrganizationMember[]> {
    const result = await this.dependencies.pool.query<{
      user_id: string;
      role: OrganizationRole;
      member_since: Date;
    }>(
      `SELECT user_id, role, member_since FROM ${organizationMembersTable.name}
       WHERE organization_id = $1
       ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, member_since, user_id`,
      [organizationId],
    );
    return result.rows.map((row) => ({
      userId: row.user_id,
      role: row.role,
      memberSince: row.member_since.toISOString(),
    }));
  }

  /**
   * The session's role in its organization; the first member an organization sees becomes its owner here
   * (a grant by `system:organization-roles`).
   */
  async roleOf(session: Session, correlationId: string): Promise<OrganizationRole> {
    const organizationId = organizationOf(session);
    const granted =
      (await this.grantedRoleOf(organizationId, session.userId)) ??
      ((await this.recordFirstMemberIfNone(organizationId, session.userId, correlationId))
        ? await this.grantedRoleOf(organizationId, session.userId)
        : undefined);
    return effectiveRoleOf(granted, await this.currentClaimOf(organizationId, session));
  }

  /**
   * At a sign-in through the identity provider (OIDC_ROLE_CLAIM configured), before its session is minted:
   * the role the provider claims for the user, recorded (`OrganizationRoleClaimed`, its actor `provider`,
   * e.g. `oidc:<issuer>`) when it differs from the last one recorded. From then on it is the role of the
   * user's sessions that carry an earlier claim: a provider's demotion reaches the sessions issued before it,
   * at the next sign-in.
   */
  async recordProviderClaim(session: Session, provider: string, correlationId: string): Promise<void> {
    if (session.organizationId === null) return;
    const organizationId = session.organizationId;
    const role = claimedRoleOf(session) ?? null;
    const recorded = await this.recordedClaimOf(organizationId, session.userId);
    if ((recorded?.role ?? null) === role) return;
    const appended = await this.dependencies.store.append({
      streamId: organizationStreamOf(organizationId),
      // Claims are the provider's word, not decided here: the last one appended is the last it said.
      expectedVersion: "any",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "OrganizationRoleClaimed",
            data: { organizationId, userId: session.userId, role },
            metadata: this.metadata(provider, correlationId),
          },
        },
      ],
    });
    await this.dependencies.waiter.waitFor(
      appended.position,
      projections,
      this.dependencies.projectionWaitTimeoutMs,
    );
  }

  /**
   * The provider's claim that decides a session carrying one: the last recorded at a sign-in, when it is
   * later than the session's own; else the session's. A session carrying none: none (the grants decide).
   */
  private async currentClaimOf(
    organizationId: string,
    session: Session,
  ): Promise<OrganizationRole | undefined> {
    if (session.providerRole === undefined) return undefined;
    const recorded = await this.recordedClaimOf(organizationId, session.userId);
    if (recorded && isLaterThanSession(recorded.claimedAt, session)) return recorded.role ?? undefined;
    return claimedRoleOf(session);
  }

  private async recordedClaimOf(
    organizationId: string,
    userId: string,
  ): Promise<{ role: OrganizationRole | null; claimedAt: Date } | undefined> {
    const result = await this.dependencies.pool.query<{ role: OrganizationRole | null; claimed_at: Date }>(
      `SELECT role, claimed_at FROM ${organizationRoleClaimsTable.name}
       WHERE organization_id = $1 AND user_id = $2`,
      [organizationId, userId],
    );
    const row = result.rows[0];
    return row && { role: row.role, claimedAt: row.claimed_at };
  }

  /**
   * Before `userId` issues the organization's key (through the API or an admin): when the organization has
   * no member yet, its first is recorded here, on its stream. Issuing makes the issuer a member on the key's
   * own stream, which a concurrent first request's grant does not contend with; without this, both could be
   * decided first, and two owners made (C14: the first member alone).
   */
  async admitKeyIssuer(organizationId: string, userId: string, correlationId: string): Promise<void> {
    if ((await this.grantedRoleOf(organizationId, userId)) === undefined)
      await this.recordFirstMemberIfNone(organizationId, userId, correlationId);
  }

  /**
   * The session's role, when it may take the action; else OrganizationRoleRefusedError. Read once the members
   * have applied every grant in the organization's log, so a change of role committed before this call is
   * never missed for the projection's lag. Commands call it inside their turn, right before appending
   * (ApiKeyService.setLimits, setOrganizationKeyDefaults, AlertService.addWebhook): a change that waited for
   * others is judged by the role when it is decided, not when it arrived. With the role, the organization's
   * stream version it was read through, for the change's metadata (`organizationVersion`).
   */
  async require(
    session: Session,
    action: OrganizationAction,
    correlationId: string,
  ): Promise<{ role: OrganizationRole; organizationVersion: number | undefined }> {
    const organizationId = organizationOf(session);
    const head = await this.caughtUpHead(organizationId);
    const role = await this.roleOf(session, correlationId);
    if (!mayDo(role, action))
      throw new OrganizationRoleRefusedError(
        `Your role in the organization (${role}) may not ${actionTexts[action]}; ask an owner or admin`,
      );
    // An organization seen first just now had its first member recorded by roleOf: read through that.
    const readThrough =
      head ?? (await this.dependencies.store.readLastEvent(organizationStreamOf(organizationId)));
    return { role, organizationVersion: readThrough?.streamVersion };
  }

  /** `require` for a change: what its event's metadata records of the role that allowed it. */
  async authorize(
    session: Session,
    action: OrganizationAction,
    correlationId: string,
  ): Promise<AuthorizationBasis> {
    const { organizationVersion } = await this.require(session, action, correlationId);
    return { organizationVersion };
  }

  /** The session's role and what it may do, for the console. */
  async accessOf(session: Session, correlationId: string) {
    const role = await this.roleOf(session, correlationId);
    return {
      organizationId: organizationOf(session),
      userId: session.userId,
      role,
      actions: actionsOf(role),
    };
  }

  /** Gives `userId` the role `role` in the session's organization, as the decision allows. */
  async grant(
    session: Session,
    userId: string,
    role: OrganizationRole,
    correlationId: string,
  ): Promise<OrganizationMember> {
    const organizationId = organizationOf(session);
    // Decided on the members as of the stream's last event: a grant landing meanwhile means deciding again.
    return this.commands.decideAndAppend(organizationStreamOf(organizationId), async () => {
      const head = await this.caughtUpHead(organizationId);
      const actorRole = await this.roleOf(session, correlationId);
      const members = await this.members(organizationId);
      const target = members.find((member) => member.userId === userId);
      const decision = decideRoleGrant({
        actorRole,
        target: target?.role,
        role,
        ownerCount: members.filter((member) => member.role === "owner").length,
      });
      switch (decision.outcome) {
        case "refused":
          throw new OrganizationRoleRefusedError(decision.reason);
        case "unchanged":
          return target!;
        case "grant":
          break;
        default: {
          const unreachable: never = decision;
          throw new Error(`unknown decision ${JSON.stringify(unreachable)}`);
        }
      }
      await this.append(
        organizationId,
        { userId, role },
        head,
        this.metadata(`user:${session.userId}`, correlationId),
      );
      return (await this.members(organizationId)).find((member) => member.userId === userId)!;
    });
  }

  /**
   * Not in the stream's turn: a grant's own decision asks for the actor's role, which may record the first
   * member on the stream the grant holds the turn of.
   */
  private async recordFirstMember(organizationId: string, userId: string, correlationId: string) {
    await retryingConflicts(async () => {
      const head = await this.caughtUpHead(organizationId);
      // The members have applied the whole stream: a first member granted there is among them by now.
      if (await this.isKnown(organizationId)) return;
      await this.append(
        organizationId,
        { userId, role: "owner" },
        head,
        this.metadata(firstMemberActor, correlationId),
      );
    });
  }

  private async append(
    organizationId: string,
    grant: { userId: string; role: OrganizationRole },
    head: RecordedEvent | undefined,
    metadata: EventMetadata,
  ): Promise<void> {
    const appended = await this.dependencies.store.append({
      streamId: organizationStreamOf(organizationId),
      expectedVersion: head?.streamVersion ?? "no-stream",
      events: [
        {
          eventId: randomUUID(),
          event: { type: "OrganizationRoleGranted", data: { organizationId, ...grant }, metadata },
        },
      ],
    });
    await readBackRecorded(() =>
      this.dependencies.waiter.waitFor(
        appended.position,
        projections,
        this.dependencies.projectionWaitTimeoutMs,
      ),
    );
  }

  /**
   * The last event of the organization's stream, once the members projection has applied it: its head alone,
   * however long the organization's history.
   */
  private async caughtUpHead(organizationId: string): Promise<RecordedEvent | undefined> {
    const head = await this.dependencies.store.readLastEvent(organizationStreamOf(organizationId));
    if (head)
      await this.dependencies.waiter.waitFor(
        head.position,
        projections,
        this.dependencies.projectionWaitTimeoutMs,
      );
    return head;
  }

  private async grantedRoleOf(organizationId: string, userId: string): Promise<OrganizationRole | undefined> {
    const result = await this.dependencies.pool.query<{ role: OrganizationRole }>(
      `SELECT role FROM ${organizationMembersTable.name} WHERE organization_id = $1 AND user_id = $2`,
      [organizationId, userId],
    );
    return result.rows[0]?.role;
  }

  /** Whether the organization was unknown, so that a first member was (or is being) recorded. */
  private async recordFirstMemberIfNone(
    organizationId: string,
    userId: string,
    correlationId: string,
  ): Promise<boolean> {
    if (await this.isKnown(organizationId)) return false;
    await this.recordFirstMember(organizationId, userId, correlationId);
    return true;
  }

  private async isKnown(organizationId: string): Promise<boolean> {
    const result = await this.dependencies.pool.query(
      `SELECT 1 FROM ${organizationsTable.name} WHERE organization_id = $1`,
      [organizationId],
    );
    return (result.rowCount ?? 0) > 0;
  }

  private metadata(actor: string, correlationId: string): EventMetadata {
    return { actor, correlationId, occurredAt: this.now().toISOString() };
  }
}

function organizationOf(session: Session): string {
  if (session.organizationId === null)
    throw new OrganizationRequiredError("This session belongs to no organization");
  return session.organizationId;
}

const actionTexts: Record<OrganizationAction, string> = {
  "manage-keys": "manage the organization's keys",
  "read-members": "list the organization's members",
  "set-key-limits": "set the limits or allowed models of the organization's keys",
  "set-key-defaults": "set the organization's key defaults",
  "read-members-activity": "read other members' activity",
  "grant-roles": "grant roles",
  "manage-alerts": "manage the organization's alerts and webhooks",
};
