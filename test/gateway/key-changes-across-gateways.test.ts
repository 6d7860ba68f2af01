import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { callJson } from "../support/json-call";

/**
 * C4: "A key change is effective for the next request". Each gateway admits requests from its own copy of
 * the keys, which a change made through another process reaches a notification later; the hold, decided in
 * the database with the grant, refuses a key deactivated, deleted or no longer allowed its model since. So
 * the request sent the moment the change's call returns, to the other gateway, is refused as admission would
 * refuse it, and holds nothing; the key's model list, which no hold checks, reads the key as it is now. A
 * key allowed more models is served them at once: a model the copy refuses is checked against the key now.
 */

type Change = "deactivated" | "deleted" | "restricted";
const changes: readonly Change[] = ["deactivated", "deleted", "restricted"];
const keysPerChange = 10;
const model = "alpha-5.4-mini";

describe("a key changed through one gateway", () => {
  let database: TestDatabase;
  let changing: GatewayHarness;
  let serving: GatewayHarness;
  let session: string;

  beforeAll(async () => {
    database = await createTestDatabase("key_changes_across_gateways");
    changing = await startGatewayHarness({ database });
    serving = await startGatewayHarness({ database, charges: changing.charges });
    session = await changing.session("changes-across");
    await changing.topUp({ kind: "user", id: "changes-across" }, "1000");
  }, 90_000);
  afterAll(async () => {
    await serving?.close();
    await changing?.close();
    await database?.drop();
  });

  const generate = (harness: GatewayHarness, key: string, slug: string = model) =>
    fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: slug, messages: [{ role: "user", content: "Hi" }], max_tokens: 5 }),
    });

  async function change(kind: Change, uuid: string): Promise<void> {
    const reply =
      kind === "deactivated"
        ? await callJson(changing.url, "PATCH", `/llm/apis/${uuid}/status`, session, { status: 0 })
        : kind === "deleted"
          ? await callJson(changing.url, "DELETE", `/llm/apis/${uuid}`, session)
          : await callJson(changing.url, "PUT", `/llm/apis/${uuid}/limits`, session, {
              allowedModels: ["beta"],
            });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  }

  it.each(changes)(
    "given a key %s, then the other gateway's next request is refused and holds nothing",
    async (kind) => {
      for (let attempt = 0; attempt < keysPerChange; attempt++) {
        const issued = await changing.issueKey(session, { name: `${kind} ${attempt}` });
        // The other gateway has the key in its copy: it served it.
        const served = await generate(serving, issued.key);
        expect(served.status).toBe(200);
        await served.text();

        await change(kind, issued.uuid);
        const refused = await generate(serving, issued.key);
        const body = (await refused.json()) as { status: number };
        expect([refused.status, body.status]).toEqual(kind === "restricted" ? [403, 150] : [401, 110]);

        const requestId = refused.headers.get("x-request-id")!;
        const held = await serving.service.ledger.pool.query(
          `SELECT (SELECT count(*) FROM request_holds WHERE request_id = $1)
              + (SELECT count(*) FROM ledger_events WHERE stream_id = 'usage-' || $1) AS count`,
          [requestId],
        );
        expect(Number(held.rows[0]!.count)).toBe(0);

        // The model list, which no hold checks, reads the key as it is now.
        const models = await fetch(`${serving.baseUrl}/models`, {
          headers: { authorization: `Bearer ${issued.key}` },
        });
        const listed = (await models.json()) as { data?: { id: string }[] };
        if (kind === "restricted") {
          expect(models.status).toBe(200);
          expect(listed.data!.map((entry) => entry.id)).not.toContain(model);
          expect(listed.data!.every((entry) => entry.id.startsWith("beta"))).toBe(true);
        } else expect(models.status).toBe(401);
      }
    },
    60_000,
  );

  it("given a key limited to a family and then allowed every model, then the other gateway's next request of another family is served", async () => {
    for (let attempt = 0; attempt < keysPerChange; attempt++) {
      const issued = await changing.issueKey(session, { name: `widened ${attempt}` });
      await change("restricted", issued.uuid);
      // The other gateway has the key in its copy, limited: it served the family and refused the rest.
      const served = await generate(serving, issued.key, "beta-3-flash");
      expect(served.status).toBe(200);
      await served.text();
      const refused = await generate(serving, issued.key);
      expect(refused.status).toBe(403);
      await refused.text();

      const widened = await callJson(changing.url, "PUT", `/llm/apis/${issued.uuid}/limits`, session, {
        allowedModels: null,
      });
      expect(widened.status, JSON.stringify(widened.body)).toBe(200);
      const allowed = await generate(serving, issued.key);
      expect([allowed.status, await allowed.text()]).toEqual([200, expect.stringContaining(model)]);
    }
  }, 60_000);
});
