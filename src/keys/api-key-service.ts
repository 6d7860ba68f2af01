import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import { activeKeysProjection } from "../../projections/active-keys";
import { keyListsProjection } from "../../projections/key-lists";
import {
  organizationKeyIssuersTable,
  organizationMembersProjection,
} from "../../projections/organization-members";
import { assert } from "../kernel/assert";
import type {
  AccountReference,
  AuthorizationBasis,
  ChangeAuthorization,
  EventMetadata,
  LedgerEvent,
} from "../ledger/events";
import type { ProjectionWaiter } from "../ledger/projection/projection-waiter";
import { readBackAnsweringSecret, readBackRecorded } from "../ledger/projection/recorded-not-visible";
import { StreamCommands } from "../ledger/store/conflict-retry";
import type { EventStore, EventToAppend } from "../ledger/store/event-store";
import type { Session } from "../sessions/session-tokens";
import { type ApiKeyCaller, type ApiKeyCommand, decideApiKey, foldApiKey } from "./api-key-decider";
import { type ApiKeyLimitsView, type ApiKeySpend, type KeyLimits, readKeyLimits } from "./api-key-limits";
import { type ApiKeyHasher, generateApiKeyValue, previewOf } from "./api-key-secret";
import {
  defaultLimitsOf,
  type OrganizationKeyDefaults,
  organizationKeyDefaultsOf,
  organizationStreamOf,
} from "./organization-key-defaults";

/**
 * Key management (C4): each command appends one event, then returns only after the key projections have
 * applied it, so the very next generation request sees the change. An issuance answers its key, shown only
 * then, even when they lag past the wait.
 */

export interface ApiKeyRecord {
  uuid: string;
  name: string;
  description: string;
  isOrganization: boolean;
  status: 0 | 1;
  keyPreview: string;
  createdAt: string;
  /** The key's limits and its spend this Seoul month and in total (null: another member's, see SpendShown). */
  limits: ApiKeyLimitsView["limits"];
  spend: ApiKeySpend | null;
}

/**
 * Whose keys' spend a reader sees: every key's (owners, admins, personal keys), or only the keys one member
 * issued — a member reads no other member's activity (C14), and a key's spend is its issuer's activity.
 */
export type SpendShown = { of: "every-key" } | { of: "keys-issued-by"; userId: string };

/** A key's limits, and its spend when the reader may see it. */
export interface ShownKeyLimits {
  limits: ApiKeyLimitsView["limits"];
  spend: ApiKeySpend | null;
}

export interface IssuedApiKey extends Omit<ApiKeyRecord, "keyPreview" | "limits" | "spend"> {
  /** Shown once. */
  key: string;
}

export class OrganizationRequiredError extends Error {
  override readonly name = "OrganizationRequiredError";
}

export class ApiKeyNotFoundError extends Error {
  override readonly name = "ApiKeyNotFoundError";
}

interface Dependencies {
  pool: Pool;
  store: EventStore;
  waiter: ProjectionWaiter;
  hasher: ApiKeyHasher;
  /** Records an organization's first member before its first key (OrganizationRoleService). */
  organizationMembers: {
    admitKeyIssuer(organizationId: string, userId: string, correlationId: string): Promise<void>;
  };
  projectionWaitTimeoutMs: number;
  /**
   * The process's turns per stream, shared with OrganizationRoleService: key defaults and grants, both on the
   * organization's stream, then take turns instead of racing each other within a process.
   */
  commands?: StreamCommands;
  now?: () => Date;
}

// The members projection too: an organization key's issuer is a member (its owner, if first) from then on.
const keyProjections = [
  activeKeysProjection.name,
  keyListsProjection.name,
  organizationMembersProjection.name,
];

export class ApiKeyService {
  private readonly now: () => Date;
  private readonly commands: StreamCommands;

  constructor(private readonly dependencies: Dependencies) {
    this.now = dependencies.now ?? (() => new Date());
    this.commands = dependencies.commands ?? new StreamCommands();
  }

  async issue(
    session: Session,
    request: { name: string; description: string; isOrganization: boolean },
    correlationId: string,
  ): Promise<IssuedApiKey> {
    return this.issueFor(
      session,
      { owner: ownerFor(session, request.isOrganization), issuedByUserId: session.userId },
      request,
      correlationId,
    );
  }

  /**
   * The admin API's issuance: a key for any account. `issuedByUserId` is the owner for personal keys; for
   * an organization key, the member it is issued for (an issuer is a member: never the admin, who is none).
   */
  async issueAsAdmin(
    admin: { admin: string },
    target: { owner: AccountReference; issuedForUserId: string | null },
    request: { name: string; description: string },
    correlationId: string,
  ): Promise<IssuedApiKey> {
    assert(
      target.owner.kind === "user" || target.issuedForUserId !== null,
      "an organization key issued by an admin names the member it is for",
    );
    const issuedByUserId = target.owner.kind === "user" ? target.owner.id : target.issuedForUserId!;
    return this.issueFor(
      admin,
      { owner: target.owner, issuedByUserId },
      { ...request, isOrganization: target.owner.kind === "organization" },
      correlationId,
    );
  }

  private async issueFor(
    actor: KeyActor,
    target: { owner: AccountReference; issuedByUserId: string },
    request: { name: string; description: string; isOrganization: boolean },
    correlationId: string,
  ): Promise<IssuedApiKey> {
    const { owner, issuedByUserId } = target;
    if (owner.kind === "organization")
      await this.dependencies.organizationMembers.admitKeyIssuer(owner.id, issuedByUserId, correlationId);
    const keyId = randomUUID();
    const key = generateApiKeyValue();
    const metadata = this.metadata(actor, correlationId);
    const issued: EventToAppend = {
      eventId: randomUUID(),
      event: {
        type: "ApiKeyIssued",
        data: {
          keyId,
          owner,
          issuedByUserId,
          name: request.name,
          description: request.description,
          keyHash: this.dependencies.hasher.hash(key),
          keyPreview: previewOf(key),
        },
        metadata,
      },
    };
    const appended = await this.dependencies.store.append({
      streamId: `apikey-${keyId}`,
      expectedVersion: "no-stream",
      events: [issued, ...(await this.defaultLimitsEvents(issued, { keyId, owner }))],
    });
    await readBackAnsweringSecret(() =>
      this.dependencies.waiter.waitFor(
        appended.position,
        keyProjections,
        this.dependencies.projectionWaitTimeoutMs,
      ),
    );
    return {
      uuid: keyId,
      name: request.name,
      description: request.description,
      isOrganization: request.isOrganization,
      status: 1,
      key,
      createdAt: metadata.occurredAt,
    };
  }

  /**
   * A new organization key starts with its organization's defaults (the models it may call), as a limits
   * event right after its issuance, in the same append: no moment exists when it could call another model.
   */
  private async defaultLimitsEvents(
    issued: EventToAppend,
    key: { keyId: string; owner: AccountReference },
  ): Promise<EventToAppend[]> {
    if (key.owner.kind !== "organization") return [];
    const data = defaultLimitsOf(await this.readOrganizationKeyDefaults(key.owner.id), key);
    if (data === undefined) return [];
    const metadata = { ...issued.event.metadata, causationId: issued.eventId };
    return [{ eventId: randomUUID(), event: { type: "ApiKeyLimitsSet", data, metadata } }];
  }

  async readOrganizationKeyDefaults(organizationId: string): Promise<OrganizationKeyDefaults> {
    const latest = await this.dependencies.store.readLastEvent(
      organizationStreamOf(organizationId),
      "OrganizationKeyDefaultsSet",
    );
    return organizationKeyDefaultsOf(organizationId, latest);
  }

  /**
   * The models the organization's keys issued from now on may call (null: every model). `authorize` (the
   * caller's role, C14) is decided on the organization's stream as read, and the defaults appended at that
   * version: a grant landing in between (a demotion) means deciding again, so none is set after it.
   */
  async setOrganizationKeyDefaults(
    actor: KeyActor,
    organizationId: string,
    allowedModels: string[] | null,
    correlationId: string,
    authorize: ChangeAuthorization = async () => undefined,
  ): Promise<OrganizationKeyDefaults> {
    const streamId = organizationStreamOf(organizationId);
    await this.commands.decideAndAppend(streamId, async () => {
      const head = await this.dependencies.store.readLastEvent(streamId);
      const basis = await authorize();
      await this.dependencies.store.append({
        streamId,
        expectedVersion: head?.streamVersion ?? "no-stream",
        events: [
          {
            eventId: randomUUID(),
            event: {
              type: "OrganizationKeyDefaultsSet",
              data: { organizationId, allowedModels },
              metadata: { ...this.metadata(actor, correlationId), ...basis },
            },
          },
        ],
      });
    });
    return { organizationId, allowedModels };
  }

  async list(
    session: Session,
    isOrganization: boolean,
    spendShown: SpendShown = { of: "every-key" },
  ): Promise<ApiKeyRecord[]> {
    const owner = ownerFor(session, isOrganization);
    const result = await this.dependencies.pool.query<{
      key_id: string;
      name: string;
      description: string;
      status: number;
      key_preview: string;
      created_at: Date;
    }>(
      `SELECT key_id, name, description, status, key_preview, created_at FROM projection_key_lists
       WHERE owner_kind = $1 AND owner_id = $2 ORDER BY created_at DESC, key_id`,
      [owner.kind, owner.id],
    );
    const keyIds = result.rows.map((row) => row.key_id);
    const limits = await this.shownLimits(keyIds, spendShown);
    return result.rows.map((row) => ({
      uuid: row.key_id,
      name: row.name,
      description: row.description,
      isOrganization,
      status: row.status === 1 ? 1 : 0,
      keyPreview: row.key_preview,
      createdAt: row.created_at.toISOString(),
      ...limits.get(row.key_id)!,
    }));
  }

  /** The keys' limits, and their spend where `spendShown` lets the reader see it. */
  private async shownLimits(
    keyIds: readonly string[],
    spendShown: SpendShown,
  ): Promise<Map<string, ShownKeyLimits>> {
    const views: Map<string, ShownKeyLimits> = await readKeyLimits(
      this.dependencies.pool,
      keyIds,
      this.now(),
    );
    if (spendShown.of === "every-key") return views;
    const issued = await this.dependencies.pool.query<{ key_id: string }>(
      `SELECT key_id FROM ${organizationKeyIssuersTable.name}
       WHERE key_id = ANY($1::text[]) AND issued_by_user_id = $2`,
      [keyIds, spendShown.userId],
    );
    const own = new Set(issued.rows.map((row) => row.key_id));
    for (const [keyId, view] of views) if (!own.has(keyId)) views.set(keyId, { ...view, spend: null });
    return views;
  }

  /** The owner of a key the caller manages (its own or its organization's); else ApiKeyNotFoundError. */
  async ownerOfManagedKey(caller: KeyActor, keyId: string): Promise<AccountReference> {
    const state = foldApiKey(await this.dependencies.store.readStream(`apikey-${keyId}`));
    if (state.kind === "absent" || state.kind === "deleted" || !mayManage(caller, state.owner))
      throw new ApiKeyNotFoundError(`API key ${keyId} not found`);
    return state.owner;
  }

  /** A key's limits and spend (where `spendShown` lets the reader see it), for its owner or an admin. */
  async readLimits(
    caller: KeyActor,
    keyId: string,
    spendShown: SpendShown = { of: "every-key" },
  ): Promise<ShownKeyLimits> {
    const state = foldApiKey(await this.dependencies.store.readStream(`apikey-${keyId}`));
    if (state.kind === "absent" || state.kind === "deleted" || !mayManage(caller, state.owner))
      throw new ApiKeyNotFoundError(`API key ${keyId} not found`);
    return (await this.shownLimits([keyId], spendShown)).get(keyId)!;
  }

  /**
   * Replaces the key's limits (all null clears them). Spend and rate limits bind from the commit of their
   * event: the admission statement reads them from the ledger's inline table. The models the key may call
   * are checked before the hold, on each process's admission copy, so this waits, as a status change does,
   * until this process's copy has seen the event; other processes see it once the projections notify them.
   */
  async setLimits(
    caller: KeyActor,
    keyId: string,
    limits: KeyLimits,
    correlationId: string,
    authorize?: KeyCommandAuthorization,
  ): Promise<ApiKeyLimitsView> {
    await this.execute(caller, { type: "SetApiKeyLimits", keyId, limits }, correlationId, authorize);
    return (await readKeyLimits(this.dependencies.pool, [keyId], this.now())).get(keyId)!;
  }

  changeStatus(session: Session, keyId: string, status: 0 | 1, correlationId: string): Promise<void> {
    return this.execute(session, { type: "ChangeApiKeyStatus", keyId, status }, correlationId);
  }

  delete(session: Session, keyId: string, correlationId: string): Promise<void> {
    return this.execute(session, { type: "DeleteApiKey", keyId }, correlationId);
  }

  private async execute(
    caller: KeyActor,
    command: ApiKeyCommand,
    correlationId: string,
    authorize?: KeyCommandAuthorization,
  ): Promise<void> {
    const streamId = `apikey-${command.keyId}`;
    // Decided on the key's events; another change to the key meanwhile means deciding again on its new state.
    const appended = await this.commands.decideAndAppend(streamId, async () => {
      const state = foldApiKey(await this.dependencies.store.readStream(streamId));
      const decision = decideApiKey(state, command, callerOf(caller));
      if (decision.outcome === "not-found" || state.kind === "absent")
        throw new ApiKeyNotFoundError(`API key ${command.keyId} not found`);
      // In the key's turn, right before the append: not when the request arrived, however long it waited.
      const basis = await authorize?.(state.owner);
      return this.dependencies.store.append({
        streamId,
        expectedVersion: decision.expectedVersion,
        events: [
          {
            eventId: randomUUID(),
            event: {
              ...decision.event,
              metadata: { ...this.metadata(caller, correlationId), ...basis },
            } as LedgerEvent,
          },
        ],
      });
    });
    await readBackRecorded(() =>
      this.dependencies.waiter.waitFor(
        appended.position,
        keyProjections,
        this.dependencies.projectionWaitTimeoutMs,
      ),
    );
  }

  private metadata(caller: KeyActor, correlationId: string): EventMetadata {
    const actor = "admin" in caller ? caller.admin : `user:${caller.userId}`;
    return { actor, correlationId, occurredAt: this.now().toISOString() };
  }
}

/**
 * Whether the caller may run a key command on a key of `owner`, beyond managing it (C14: only owners and
 * admins set an organization key's limits); throws when not. Run in the key's turn, before each append; what
 * it read goes into the event's metadata.
 */
export type KeyCommandAuthorization = (owner: AccountReference) => Promise<AuthorizationBasis | undefined>;

function ownerFor(session: Session, isOrganization: boolean): AccountReference {
  if (!isOrganization) return { kind: "user", id: session.userId };
  if (!session.organizationId) throw new OrganizationRequiredError("This session belongs to no organization");
  return { kind: "organization", id: session.organizationId };
}

/** Who manages a key: a session (its own keys) or the admin API (any key). */
export type KeyActor = Session | { admin: string };

function callerOf(actor: KeyActor): ApiKeyCaller {
  return "admin" in actor ? { admin: true } : { owners: ownersOf(actor) };
}

function mayManage(actor: KeyActor, owner: AccountReference): boolean {
  return (
    "admin" in actor ||
    ownersOf(actor).some((candidate) => candidate.kind === owner.kind && candidate.id === owner.id)
  );
}

/** A session manages its user's personal keys and its organization's shared keys. */
function ownersOf(session: Session): AccountReference[] {
  const owners: AccountReference[] = [{ kind: "user", id: session.userId }];
  if (session.organizationId) owners.push({ kind: "organization", id: session.organizationId });
  return owners;
}
