import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * An organization's charges are its members' requests (C14: owners and admins alone read other members'
 * activity): through the real gateway and billing, a member reads the charges, per-key totals and receipts
 * of the keys they issued, and not the statement's charge lines; the owner reads everyone's; the balance and
 * the statement's totals stay the organization's, open to each member.
 */

const organizationId = "org-member-charges";
let harness: GatewayHarness;
let owner: string;
let member: string;
const requests = { owner: "", member: "" };
const keys = { owner: "", member: "" };
/** Each member's requests go to a model of their own, so a statement line by model could name whose they are. */
const models = { owner: "gamma-4-5", member: "alpha-5.4-mini" };

async function call(path: string, token: string) {
  return callJson(harness.url, "GET", path, token);
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "member_charges",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  owner = await harness.session("mc-owner", organizationId);
  member = await harness.session("mc-member", organizationId);
  expect((await call("/llm/organization/members", owner)).status).toBe(200);
  expect((await call("/llm/organization/members", member)).body).toMatchObject({ you: { role: "member" } });
  await harness.topUp({ kind: "organization", id: organizationId }, "10000");
  for (const [who, token] of [
    ["owner", owner],
    ["member", member],
  ] as const) {
    const issued = await harness.issueKey(token, { isOrganization: true, name: `${who} key` });
    keys[who] = issued.uuid;
    const completion = await harness
      .openai(issued.key)
      .chat.completions.create({
        model: models[who],
        max_tokens: 5,
        messages: [{ role: "user", content: "Hi" }],
      })
      .withResponse();
    requests[who] = completion.response.headers.get("x-request-id")!;
  }
  // Both charged: the owner sees both in the organization's billing.
  for (let attempt = 0; attempt < 300; attempt++) {
    const billing = await call("/llm/billing?isOrganization=true", owner);
    if ((billing.body.data as unknown[] | undefined)?.length === 2) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the two requests were not charged within 30 s");
}, 90_000);

afterAll(async () => {
  await harness?.close();
});

const requestIdsOf = (body: Record<string, unknown>) =>
  (body.data as { requestId: string }[]).map((charge) => charge.requestId).sort();

describe("an organization's charges, by role", () => {
  it("lists a member only the charges of the keys they issued, whole or by page; the owner everyone's", async () => {
    expect(requestIdsOf((await call("/llm/billing?isOrganization=true", owner)).body)).toEqual(
      [requests.owner, requests.member].sort(),
    );
    expect(requestIdsOf((await call("/llm/billing?isOrganization=true", member)).body)).toEqual([
      requests.member,
    ]);
    expect(requestIdsOf((await call("/llm/billing?isOrganization=true&limit=10", member)).body)).toEqual([
      requests.member,
    ]);
  });

  it("totals a member's own keys only; the owner's totals hold every key", async () => {
    const groupsOf = async (token: string) =>
      (
        (await call("/llm/billing/totals?isOrganization=true&groupBy=key", token)).body.totals as {
          group: string;
        }[]
      )
        .map((total) => total.group)
        .sort();
    expect(await groupsOf(owner)).toEqual([keys.owner, keys.member].sort());
    expect(await groupsOf(member)).toEqual([keys.member]);
  });

  it("gives a member the usage per day of the keys they issued only; the owner every key's", async () => {
    const usageKeysOf = async (token: string, expected: number) => {
      // The usage-by-day projection follows the charges a moment later.
      for (let attempt = 0; attempt < 100; attempt++) {
        const reply = await call("/llm/usage?isOrganization=true", token);
        const keyIds = (reply.body.data as { keyId: string }[]).map((row) => row.keyId).sort();
        if (keyIds.length >= expected) return keyIds;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error("the usage per day never showed the charges");
    };
    expect(await usageKeysOf(owner, 2)).toEqual([keys.owner, keys.member].sort());
    expect(await usageKeysOf(member, 1)).toEqual([keys.member]);
    const memberUsage = JSON.stringify((await call("/llm/usage?isOrganization=true", member)).body);
    expect(memberUsage).not.toContain("owner key");
    expect(memberUsage).not.toContain(models.owner);
  });

  it("answers a member's own receipt and refuses another member's as not found, as it would an outsider", async () => {
    expect((await call(`/llm/receipts/${requests.member}`, member)).status).toBe(200);
    expect(await call(`/llm/receipts/${requests.owner}`, member)).toMatchObject({
      status: 404,
      body: { status: 120 },
    });
    expect((await call(`/llm/receipts/${requests.member}`, owner)).status).toBe(200);
  });

  it("refuses the organization's receipts as not found to the owner of another organization", async () => {
    const outsider = await harness.session("mc-outsider", "org-member-charges-other");
    // Its first visit makes the outsider its own organization's owner: a role that reads every receipt there.
    expect(await call("/llm/organization/members", outsider)).toMatchObject({
      status: 200,
      body: { you: { role: "owner" } },
    });
    for (const requestId of [requests.owner, requests.member])
      expect(await call(`/llm/receipts/${requestId}`, outsider)).toMatchObject({
        status: 404,
        body: { status: 120 },
      });
  });

  it("shows a member the statement's line of the keys they issued and other members' keys as one line naming none; the owner each key", async () => {
    type KeyLine = { keyId: string | null; keyName: string | null; requests: number; amountWon: string };
    type ModelLine = { model: string | null; requests: number; amountWon: string };
    const statementOf = async (token: string) =>
      (await call("/llm/statements?account=organization", token)).body as {
        chargesWon: string;
        chargeCount: number;
        chargesByModel: ModelLine[];
        chargesByKey: KeyLine[];
      };
    const owners = await statementOf(owner);
    const members = await statementOf(member);
    const lineOf = (keyId: string) => owners.chargesByKey.find((line) => line.keyId === keyId)!;

    expect(owners.chargesByKey.map((line) => line.keyId).sort()).toEqual([keys.owner, keys.member].sort());
    expect(owners.chargesByModel.map((line) => [line.model, line.requests])).toEqual([
      [models.member, 1],
      [models.owner, 1],
    ]);
    expect(members).toMatchObject({ chargesWon: owners.chargesWon, chargeCount: owners.chargeCount });
    expect(members.chargesByKey).toEqual([
      lineOf(keys.member),
      { keyId: null, keyName: null, requests: 1, amountWon: lineOf(keys.owner).amountWon },
    ]);
    // By model too: the member's own requests by model, and other members' as one line naming no model.
    expect(members.chargesByModel).toEqual([
      { model: models.member, requests: 1, amountWon: lineOf(keys.member).amountWon },
      { model: null, requests: 1, amountWon: lineOf(keys.owner).amountWon },
    ]);
    const csv = await fetch(`${harness.url}/llm/statements?account=organization&format=csv`, {
      headers: { authorization: `Bearer ${member}` },
    });
    const text = await csv.text();
    expect(csv.status).toBe(200);
    expect(text).toContain(`charges_by_key,,,other members' keys,1,${lineOf(keys.owner).amountWon}`);
    expect(text).toContain(`charges_by_model,,,other members' keys,1,${lineOf(keys.owner).amountWon}`);
    for (const seen of [JSON.stringify(members), text]) {
      expect(seen).not.toContain(keys.owner);
      expect(seen).not.toContain("owner key");
      expect(seen).not.toContain(models.owner);
    }
  });

  it("keeps the balance and the statement's totals the organization's, and its charge lines for owners and admins", async () => {
    const balance = await call("/llm/balance", member);
    expect(balance.body).toMatchObject({ organization: { id: organizationId } });
    expect((await call("/llm/statements?account=organization", member)).status).toBe(200);
    expect(await call("/llm/statements?account=organization&lines=charges", member)).toMatchObject({
      status: 403,
      body: { status: 160 },
    });
    expect((await call("/llm/statements?account=organization&lines=charges", owner)).status).toBe(200);
  });
});
