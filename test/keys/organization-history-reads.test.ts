import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyHasher } from "../../src/keys/api-key-secret";
import { ApiKeyService } from "../../src/keys/api-key-service";
import { organizationStreamOf } from "../../src/keys/organization-key-defaults";
import { OrganizationRoleService } from "../../src/keys/organization-role-service";
import { StreamCommands } from "../../src/ledger/store/conflict-retry";
import type { EventStore, RecordedEvent } from "../../src/ledger/store/event-store";
import type { Session } from "../../src/sessions/session-tokens";
import { runProjections } from "../billing/billing-ledger-fixtures";
import { metadata } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

/**
 * An organization's stream grows with its history (grants, every sign-in's changed provider claim, key
 * defaults). What owners and admins do is decided at the stream's head: it must not read the history again
 * each time, or an organization with years of sign-ins pays for all of them on every action.
 */

const organizationId = `org-history-${randomUUID().slice(0, 8)}`;
const owner: Session = { userId: "owner-1", organizationId };
const historyEvents = 600;

/** The store, counting the events of the organization's stream its reads return. */
function countingOrganizationReads(store: EventStore) {
  const streamId = organizationStreamOf(organizationId);
  const counted = { events: 0 };
  const count = (events: readonly RecordedEvent[]) => {
    counted.events += events.filter((event) => event.streamId === streamId).length;
  };
  const counting: EventStore = Object.assign(Object.create(store) as EventStore, {
    readStream: async (id: string) => {
      const events = await store.readStream(id);
      count(events);
      return events;
    },
    readStreams: async (ids: readonly string[]) => {
      const streams = await store.readStreams(ids);
      for (const events of streams.values()) count(events);
      return streams;
    },
    readLastEvent: async (id: string, type?: RecordedEvent["type"]) => {
      const event = await store.readLastEvent(id, type);
      if (event) count([event]);
      return event;
    },
  });
  return { counting, counted };
}

describe("an organization with a long history", () => {
  let harness: LedgerHarness;
  let projections: Awaited<ReturnType<typeof runProjections>>;
  let roles: OrganizationRoleService;
  let keys: ApiKeyService;
  let counted: { events: number };

  beforeAll(async () => {
    harness = await openLedgerHarness("org-history");
    projections = await runProjections(harness);
    const { counting, counted: reads } = countingOrganizationReads(harness.store);
    counted = reads;
    const commands = new StreamCommands();
    const dependencies = {
      pool: harness.ledger.pool,
      store: counting,
      waiter: projections.waiter,
      projectionWaitTimeoutMs: 10_000,
      commands,
    };
    roles = new OrganizationRoleService(dependencies);
    keys = new ApiKeyService({
      ...dependencies,
      hasher: new ApiKeyHasher("pepper-of-the-history-test"),
      organizationMembers: roles,
    });
    expect(await roles.roleOf(owner, "first-sign-in")).toBe("owner");
    // Years of sign-ins: a claim recorded for each member whose provider's claim changed.
    const appended = await harness.store.append({
      streamId: organizationStreamOf(organizationId),
      expectedVersion: "any",
      events: Array.from({ length: historyEvents }, (_, index) => ({
        eventId: randomUUID(),
        event: {
          type: "OrganizationRoleClaimed" as const,
          data: { organizationId, userId: `member-${index}`, role: index % 2 === 0 ? "member" : null },
          metadata: metadata({ actor: "oidc:https://id.example" }),
        },
      })),
    });
    await projections.waiter.waitFor(appended.position, ["organization-role-claims"], 10_000);
  });
  afterAll(async () => {
    await projections?.stop();
    await harness?.dispose();
  });

  it("decides each owner's action at its stream's head, reading a few of its events, not its history", async () => {
    const readsOf = async <T>(action: () => Promise<T>) => {
      const before = counted.events;
      const result = await action();
      return { result, eventsRead: counted.events - before };
    };

    const required = await readsOf(() => roles.require(owner, "grant-roles", "c-require"));
    const granted = await readsOf(() => roles.grant(owner, "member-7", "admin", "c-grant"));
    const defaultsSet = await readsOf(() =>
      keys.setOrganizationKeyDefaults(owner, organizationId, ["alpha-mini"], "c-defaults", async () => {
        await roles.require(owner, "set-key-defaults", "c-defaults");
      }),
    );
    const issued = await readsOf(() =>
      keys.issue(owner, { name: "ci", description: "", isOrganization: true }, "c-issue"),
    );

    expect(required.result.role).toBe("owner");
    expect(granted.result).toMatchObject({ userId: "member-7", role: "admin" });
    expect((await keys.readOrganizationKeyDefaults(organizationId)).allowedModels).toEqual(["alpha-mini"]);
    expect((await keys.readLimits(owner, issued.result.uuid)).limits.allowedModels).toEqual(["alpha-mini"]);
    for (const { eventsRead } of [required, granted, defaultsSet, issued])
      expect(eventsRead).toBeLessThan(10);
  });
});
