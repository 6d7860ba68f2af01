import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { callJson } from "../support/json-call";

/**
 * Keys limited to models (C14) through the real gateway, PostgreSQL and the official client: a model outside
 * the key's list is refused 403/150 before any hold (no event, nothing upstream), its own models are served,
 * the model list shows only what it may call, null clears the list, and the log folds to the same tables.
 */

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

async function call(
  harness: GatewayHarness,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Reply> {
  return callJson(harness.url, method, path, token, body);
}

const ask = (client: OpenAI, model: string) =>
  client.chat.completions.create({ model, max_tokens: 20, messages: [{ role: "user", content: "Hello" }] });

describe("keys limited to models", () => {
  let harness: GatewayHarness;

  /** The request events the log holds for a key: its holds, usages and voids name it. */
  async function usageEventsOf(keyId: string): Promise<{ type: string; model: string | null }[]> {
    const result = await harness.service.ledger.pool.query<{ type: string; model: string | null }>(
      `SELECT type, data->>'model' AS model FROM ledger_events
       WHERE stream_id LIKE 'usage-%' AND data->>'keyId' = $1 ORDER BY position`,
      [keyId],
    );
    return result.rows;
  }

  /** The models the simulator (every family's upstream) was asked for since it was last cleared. */
  function upstreamModels(): string[] {
    return harness.simulator.recordedRequests().map((request) => {
      const body = request.body as { model?: string } | undefined;
      return body?.model ?? request.path;
    });
  }

  beforeAll(async () => {
    harness = await startGatewayHarness({
      label: "key_allowed_models",
      service: { adminToken: testSecrets.adminToken },
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  it("given a key limited to one model, when the official client asks for another, then 403/150 naming it with nothing held or sent upstream, and its own model is served", async () => {
    // Given
    const session = await harness.session("mina");
    const limited = await harness.issueKey(session, { name: "mini only" });
    await harness.topUp({ kind: "user", id: "mina" }, "1000");
    const set = await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      allowedModels: ["alpha-5.4-mini"],
    });
    expect(set).toMatchObject({
      status: 200,
      body: { uuid: limited.uuid, limits: { allowedModels: ["alpha-5.4-mini"], monthlySpendLimitWon: null } },
    });
    const client = harness.openai(limited.key, { maxRetries: 0 });
    harness.simulator.clearRecordedRequests();

    // When
    const refusal = await ask(client, "beta-3-flash").catch((error: unknown) => error);
    const streamed = await client.responses
      .create({ model: "delta-4.6-sonnet", input: "Hello", stream: true })
      .catch((error: unknown) => error);

    // Then: refused, naming the model and where to see the key's models
    expect(refusal).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const error = refusal as InstanceType<typeof OpenAI.PermissionDeniedError>;
    expect(error.status).toBe(403);
    expect(error.error).toMatchObject({ code: 150, type: "permission_error" });
    expect(error.message).toContain("'beta-3-flash'");
    expect(error.message).toContain("GET /llm/v1/models");
    expect(streamed).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((streamed as Error).message).toContain("'delta-4.6-sonnet'");
    expect(await usageEventsOf(limited.uuid)).toEqual([]);
    expect(upstreamModels()).toEqual([]);

    // Its own model is served, held and billed as any request.
    const served = await ask(client, "alpha-5.4-mini");
    expect(served.choices[0]?.message.content).toBeTruthy();
    // The log follows the answer in batches (its hold row witnesses it meanwhile).
    await expect
      .poll(async () => (await usageEventsOf(limited.uuid)).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(2);
    const events = await usageEventsOf(limited.uuid);
    expect(events[0]).toEqual({ type: "UsageAuthorized", model: "alpha-5.4-mini" });
    expect(events.every((event) => event.model === null || event.model === "alpha-5.4-mini")).toBe(true);
    expect(upstreamModels()).toEqual(["alpha-5.4-mini"]);
  }, 60_000);

  it("given a key limited to a model and a family, then models.list() shows only those and retrieve of another is 404/120", async () => {
    const session = await harness.session("joon", "hanbit");
    const limited = await harness.issueKey(session, { isOrganization: true, name: "shared" });
    await harness.topUp({ kind: "organization", id: "hanbit" }, "1000");
    await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      allowedModels: ["beta", "alpha-5.4", "alpha-5.4"],
    });
    const client = harness.openai(limited.key, { maxRetries: 0 });

    const listed = [];
    for await (const model of client.models.list()) listed.push(model.id);

    expect(listed).toEqual([
      "alpha-5.4",
      "beta-3-flash",
      "beta-3.1-flash-lite",
      "beta-3.1-pro",
      "beta-3.5-flash",
    ]);
    expect((await client.models.retrieve("beta-3.1-pro")).id).toBe("beta-3.1-pro");
    const hidden = await client.models.retrieve("alpha-5.5").catch((error: unknown) => error);
    expect(hidden).toBeInstanceOf(OpenAI.NotFoundError);
    expect((hidden as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ code: 120 });
    expect((hidden as Error).message).toContain("not one this API key may call");
    // A family word admits every model of the family; repeats are stored once.
    expect((await ask(client, "beta-3.5-flash")).choices[0]?.message.content).toBeTruthy();
    expect((await call(harness, "GET", `/llm/apis/${limited.uuid}/limits`, session)).body).toMatchObject({
      limits: { allowedModels: ["beta", "alpha-5.4"] },
    });
  }, 60_000);

  it("given a word that names a model and a family (epsilon), then the word is the model and epsilon/* the family", async () => {
    const session = await harness.session("epsilon-user");
    const key = await harness.issueKey(session, { name: "epsilon" });
    await harness.topUp({ kind: "user", id: "epsilon-user" }, "1000");
    const client = harness.openai(key.key, { maxRetries: 0 });
    const listedWith = async (allowedModels: string[]) => {
      const set = await call(harness, "PUT", `/llm/apis/${key.uuid}/limits`, session, { allowedModels });
      expect(set.status).toBe(200);
      const listed: string[] = [];
      for await (const model of client.models.list()) listed.push(model.id);
      return listed;
    };

    expect(await listedWith(["epsilon"])).toEqual(["epsilon"]);
    const family = await listedWith(["epsilon/*"]);
    expect(family).toContain("epsilon");
    expect(family).toContain("epsilon-pro");
    expect(family.every((slug) => slug.startsWith("epsilon"))).toBe(true);
    // And served: the hold, which decides again, takes the family's entry as the listing does.
    expect((await ask(client, "epsilon-pro")).choices[0]?.message.content).toBeTruthy();
    // A bare family word that is no model's slug is still its family.
    expect((await listedWith(["beta"])).every((slug) => slug.startsWith("beta-"))).toBe(true);
    const refused = await call(harness, "PUT", `/llm/apis/${key.uuid}/limits`, session, {
      allowedModels: ["omega/*"],
    });
    expect(refused).toMatchObject({ status: 400, body: { status: 100 } });
  }, 60_000);

  it("given a limited key, when its list is set to null, then every model is listed and served again", async () => {
    const session = await harness.session("seo");
    const limited = await harness.issueKey(session, { name: "cleared" });
    await harness.topUp({ kind: "user", id: "seo" }, "1000");
    await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      allowedModels: ["gamma"],
      rateLimitRequestsPerMinute: 100,
    });
    const client = harness.openai(limited.key, { maxRetries: 0 });
    expect(await ask(client, "zeta-mini").catch((error: unknown) => error)).toBeInstanceOf(
      OpenAI.PermissionDeniedError,
    );

    const cleared = await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      allowedModels: null,
      rateLimitRequestsPerMinute: 100,
    });

    expect(cleared.body).toMatchObject({ limits: { allowedModels: null, rateLimitRequestsPerMinute: 100 } });
    expect((await ask(client, "zeta-mini")).choices[0]?.message.content).toBeTruthy();
    const listed = [];
    for await (const model of client.models.list()) listed.push(model.id);
    expect(listed).toContain("zeta-mini");
    expect(listed.length).toBeGreaterThan(20);
    // DELETE clears the models with the other limits.
    await call(harness, "PUT", `/llm/apis/${limited.uuid}/limits`, session, { allowedModels: ["gamma"] });
    const deleted = await call(harness, "DELETE", `/llm/apis/${limited.uuid}/limits`, session);
    expect(deleted.body).toMatchObject({ limits: { allowedModels: null } });
  }, 60_000);

  it("given a bad list, then 400/100 naming the entry or the field, and the key's list is unchanged", async () => {
    const session = await harness.session("hana");
    const key = await harness.issueKey(session);
    await call(harness, "PUT", `/llm/apis/${key.uuid}/limits`, session, { allowedModels: ["epsilon"] });
    const cases: [unknown, string][] = [
      [
        { allowedModels: ["alpha-5.4", "omega-1"] },
        "allowedModels.1: 'omega-1' is neither a model nor a model family",
      ],
      [{ allowedModels: [] }, "allowedModels: must name at least one model or family"],
      [{ allowedModels: "alpha-5.4" }, "allowedModels: must be an array"],
      [{ allowedModels: [42] }, "allowedModels.0"],
      [{ allowedModels: ["ALPHA"] }, "'ALPHA'"],
    ];
    for (const [body, message] of cases) {
      const reply = await call(harness, "PUT", `/llm/apis/${key.uuid}/limits`, session, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body).toMatchObject({ status: 100, message: expect.stringContaining(message) });
    }
    expect((await call(harness, "GET", `/llm/apis/${key.uuid}/limits`, session)).body).toMatchObject({
      limits: { allowedModels: ["epsilon"] },
    });
  });

  it("given an admin, then the admin routes set and read the list, the key list carries it, and the event is ApiKeyLimitsSet v2", async () => {
    const session = await harness.session("alice");
    const key = await harness.issueKey(session);
    const admin = testSecrets.adminToken;

    const set = await call(harness, "PUT", `/admin/keys/${key.uuid}/limits`, admin, {
      allowedModels: ["delta-4.6-opus", "zeta"],
      totalSpendLimitWon: "5000",
    });

    expect(set.body).toMatchObject({
      limits: { allowedModels: ["delta-4.6-opus", "zeta"], totalSpendLimitWon: "5000" },
    });
    expect((await call(harness, "GET", `/admin/keys/${key.uuid}/limits`, admin)).body).toMatchObject({
      limits: { allowedModels: ["delta-4.6-opus", "zeta"] },
    });
    const listed = await call(harness, "GET", "/llm/apis", session);
    expect((listed.body.data as { uuid: string }[]).find((item) => item.uuid === key.uuid)).toMatchObject({
      limits: { allowedModels: ["delta-4.6-opus", "zeta"] },
    });
    const stored = await harness.service.ledger.pool.query(
      `SELECT schema_version, data->'allowedModels' AS allowed, metadata->>'actor' AS actor FROM ledger_events
       WHERE stream_id = $1 AND type = 'ApiKeyLimitsSet'`,
      [`apikey-${key.uuid}`],
    );
    expect(stored.rows).toEqual([{ schema_version: 2, allowed: ["delta-4.6-opus", "zeta"], actor: "admin" }]);
  });

  it("given an organization's default of one family, when a member issues a key, then the key starts limited to it; keys issued before and personal keys keep every model", async () => {
    // Given
    const session = await harness.session("joon", "acme");
    const before = await harness.issueKey(session, { isOrganization: true, name: "before" });
    await harness.topUp({ kind: "organization", id: "acme" }, "1000");
    const set = await call(harness, "PUT", "/llm/organization/key-defaults", session, {
      allowedModels: ["gamma"],
    });
    expect(set).toEqual({ status: 200, body: { organizationId: "acme", allowedModels: ["gamma"] } });

    // When
    const after = await harness.issueKey(session, { isOrganization: true, name: "after" });
    const personal = await harness.issueKey(session, { name: "mine" });

    // Then: the new key's own limits say so, from its first request on
    expect((await call(harness, "GET", `/llm/apis/${after.uuid}/limits`, session)).body).toMatchObject({
      limits: { allowedModels: ["gamma"], monthlySpendLimitWon: null },
    });
    const client = harness.openai(after.key, { maxRetries: 0 });
    expect(await ask(client, "alpha-5.4").catch((error: unknown) => error)).toBeInstanceOf(
      OpenAI.PermissionDeniedError,
    );
    expect((await ask(client, "gamma-4-5")).choices[0]?.message.content).toBeTruthy();
    const events = await harness.service.ledger.store.readStream(`apikey-${after.uuid}`);
    expect(events.map((event) => event.type)).toEqual(["ApiKeyIssued", "ApiKeyLimitsSet"]);
    expect(events[1]!.metadata.causationId).toBe(events[0]!.eventId);
    for (const key of [before, personal]) {
      expect((await call(harness, "GET", `/llm/apis/${key.uuid}/limits`, session)).body).toMatchObject({
        limits: { allowedModels: null },
      });
    }
    // Read back by any member, and by an admin for any organization; the key may still be changed alone.
    expect(
      (await call(harness, "GET", "/llm/organization/key-defaults", await harness.session("dal", "acme")))
        .body,
    ).toEqual({
      organizationId: "acme",
      allowedModels: ["gamma"],
    });
    expect(
      (await call(harness, "GET", "/admin/organizations/acme/key-defaults", testSecrets.adminToken)).body,
    ).toEqual({ organizationId: "acme", allowedModels: ["gamma"] });
    await call(harness, "PUT", `/llm/apis/${after.uuid}/limits`, session, {});
    expect((await ask(client, "alpha-5.4")).choices[0]?.message.content).toBeTruthy();
  }, 60_000);

  it("given organization defaults, then null clears them for later keys, bad entries are 400/100, and a session of no organization is 400/100", async () => {
    const session = await harness.session("mia", "globex");
    const admin = testSecrets.adminToken;
    expect((await call(harness, "GET", "/llm/organization/key-defaults", session)).body).toEqual({
      organizationId: "globex",
      allowedModels: null,
    });
    const byAdmin = await call(harness, "PUT", "/admin/organizations/globex/key-defaults", admin, {
      allowedModels: ["delta-5-sonnet"],
    });
    expect(byAdmin.body).toEqual({ organizationId: "globex", allowedModels: ["delta-5-sonnet"] });
    const limited = await harness.issueKey(session, { isOrganization: true });
    expect((await call(harness, "GET", `/llm/apis/${limited.uuid}/limits`, session)).body).toMatchObject({
      limits: { allowedModels: ["delta-5-sonnet"] },
    });

    expect(
      (await call(harness, "PUT", "/llm/organization/key-defaults", session, { allowedModels: null })).body,
    ).toEqual({
      organizationId: "globex",
      allowedModels: null,
    });
    const unlimited = await harness.issueKey(session, { isOrganization: true });
    expect((await call(harness, "GET", `/llm/apis/${unlimited.uuid}/limits`, session)).body).toMatchObject({
      limits: { allowedModels: null },
    });
    expect((await call(harness, "GET", `/llm/apis/${limited.uuid}/limits`, session)).body).toMatchObject({
      limits: { allowedModels: ["delta-5-sonnet"] },
    });

    const bad = await call(harness, "PUT", "/llm/organization/key-defaults", session, {
      allowedModels: ["nope"],
    });
    expect(bad).toMatchObject({
      status: 400,
      body: { status: 100, message: expect.stringContaining("'nope'") },
    });
    const empty = await call(harness, "PUT", "/admin/organizations/globex/key-defaults", admin, {
      allowedModels: [],
    });
    expect(empty).toMatchObject({ status: 400, body: { status: 100 } });
    const alone = await call(
      harness,
      "PUT",
      "/llm/organization/key-defaults",
      await harness.session("solo"),
      {
        allowedModels: ["alpha"],
      },
    );
    expect(alone).toMatchObject({
      status: 400,
      body: { status: 100, message: expect.stringContaining("no organization") },
    });
    const events = await harness.service.ledger.store.readStream("organization-globex");
    // The organization's first key recorded mia as its first member (its owner) on the same stream.
    expect(events.map((event) => [event.type, event.metadata.actor])).toEqual([
      ["OrganizationKeyDefaultsSet", "admin"],
      ["OrganizationRoleGranted", "system:organization-roles"],
      ["OrganizationKeyDefaultsSet", "user:mia"],
    ]);
  }, 60_000);

  it("given all of the above, then ledger verify finds the live tables equal to a fold of the log, before and after a rebuild", async () => {
    const context = {
      pool: harness.service.ledger.pool,
      store: harness.service.ledger.store,
      projections: allProjections,
    };
    expect(await verifyProjections(context)).toEqual([]);
    await rebuildProjections(context, { batchSizeMax: 1_000 });
    expect(await verifyProjections(context)).toEqual([]);
  });
});
