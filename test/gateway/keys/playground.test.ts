import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ActivityPage } from "../../../src/gateway/activity/activity-read-model";
import { Money } from "../../../src/kernel/money";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * The console's playground without a pasted key: the signed-in session asks for a playground key, then
 * generates through /llm/v1 with it as any client would — held, recorded and charged to the session's
 * account — and reads each reply's cost back by its request id.
 */

let harness: GatewayHarness;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "playground", billing: {} });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

async function call(method: string, path: string, token: string, body?: unknown) {
  return callJson(harness.url, method, path, token, body);
}

async function costOf(session: string, requestId: string, query = ""): Promise<string> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const reply = await call("GET", `/llm/usage/activity?requestId=${requestId}${query}`, session);
    const entry = (reply.body as unknown as ActivityPage).data[0];
    if (entry?.costWon) return entry.costWon;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`request ${requestId} was never charged`);
}

async function balanceOf(session: string): Promise<Money> {
  const reply = await call("GET", "/llm/balance", session);
  return new Money((reply.body.user as { balanceWon: string }).balanceWon);
}

describe("POST /llm/playground/key", () => {
  it("given a signed-in user, when the playground holds a two-turn conversation, then each reply is billed to the user and its cost is found by request id", async () => {
    // Given
    const session = await harness.session("hana");
    await harness.topUp({ kind: "user", id: "hana" }, "1000");

    // When: the console opens the playground
    const issued = await call("POST", "/llm/playground/key", session, {});
    expect(issued.status).toBe(201);
    expect(issued.body).toMatchObject({
      name: "Console playground",
      isOrganization: false,
      status: 1,
      baseUrl: "/llm/v1",
      key: expect.stringMatching(/^svc_/),
    });
    const client = new OpenAI({
      apiKey: issued.body.key as string,
      baseURL: `${harness.url}${issued.body.baseUrl}`,
      maxRetries: 0,
    });
    const history: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Name a sea." },
    ];
    const first = await client.chat.completions
      .create({ model: "alpha-5.4", messages: history, temperature: 0.2, max_tokens: 30 })
      .withResponse();
    history.push(first.data.choices[0]!.message, { role: "user", content: "And another?" });
    const second = await client.chat.completions
      .create({ model: "alpha-5.4", messages: history, temperature: 0.2, max_tokens: 30 })
      .withResponse();

    // Then: both replies have a cost, and the user's balance paid exactly that
    const costs = [
      await costOf(session, first.response.headers.get("x-request-id")!),
      await costOf(session, second.response.headers.get("x-request-id")!),
    ];
    for (const cost of costs) expect(new Money(cost).greaterThan(0)).toBe(true);
    const charged = costs.reduce((sum, cost) => sum.plus(cost), new Money(0));
    expect((await balanceOf(session)).toFixed()).toBe(new Money(1000).minus(charged).toFixed());
    // The second turn sent the first as history: more input tokens.
    expect(second.data.usage!.prompt_tokens).toBeGreaterThan(first.data.usage!.prompt_tokens);
  }, 60_000);

  it("given an open playground, when it is opened again, then the previous key stops working and only one playground key is listed", async () => {
    const session = await harness.session("jin", "hanbit");
    await harness.topUp({ kind: "organization", id: "hanbit" }, "1000");
    const before = await call("POST", "/llm/playground/key", session, { isOrganization: true });
    const after = await call("POST", "/llm/playground/key", session, { isOrganization: true });

    const old = harness.openai(before.body.key as string);
    const failure = await old.models.list().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.AuthenticationError);
    const models = await harness.openai(after.body.key as string).models.list();
    expect(models.data.length).toBeGreaterThan(0);
    const listed = await call("GET", "/llm/apis?isOrganization=true", session);
    const playgroundKeys = (listed.body.data as { name: string; uuid: string }[]).filter(
      (key) => key.name === "Console playground",
    );
    expect(playgroundKeys.map((key) => key.uuid)).toEqual([after.body.uuid]);

    // Another member of the organization opens a playground of their own: the first one's key stays.
    const colleague = await harness.session("mira", "hanbit");
    const theirs = await call("POST", "/llm/playground/key", colleague, { isOrganization: true });
    expect(theirs.status).toBe(201);
    expect((await harness.openai(after.body.key as string).models.list()).data.length).toBeGreaterThan(0);
  });

  it("given a playground opened in six tabs at once, twice, then each gets a key and one playground key is listed", async () => {
    const session = await harness.session("many-tabs");
    const playgroundKeysListed = async () =>
      ((await call("GET", "/llm/apis", session)).body.data as { name: string; uuid: string }[])
        .filter((key) => key.name === "Console playground")
        .map((key) => key.uuid);
    for (const round of [1, 2]) {
      const replies = await Promise.all(
        Array.from({ length: 6 }, () => call("POST", "/llm/playground/key", session, {})),
      );
      expect(
        replies.map((reply) => reply.status),
        `round ${round}: ${JSON.stringify(replies.find((reply) => reply.status !== 201)?.body)}`,
      ).toEqual([201, 201, 201, 201, 201, 201]);
      const listed = await playgroundKeysListed();
      expect(listed, `round ${round}`).toHaveLength(1);
      expect(replies.map((reply) => reply.body.uuid)).toContain(listed[0]);
    }
  });

  it("refuses without a session (401/110) and with a bad body (400/100)", async () => {
    const anonymous = await fetch(`${harness.url}/llm/playground/key`, { method: "POST" });
    expect(anonymous.status).toBe(401);
    const session = await harness.session("solo");
    expect(await call("POST", "/llm/playground/key", session, { isOrganization: "yes" })).toMatchObject({
      status: 400,
      body: { status: 100, message: expect.stringContaining("isOrganization") },
    });
    expect(await call("POST", "/llm/playground/key", session, { isOrganization: true })).toMatchObject({
      status: 400,
      body: { status: 100 },
    });
  });
});
