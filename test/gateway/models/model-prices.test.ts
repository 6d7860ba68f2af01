import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * Prices users can see: GET /llm/v1/models (the official client's models.list / retrieve) and the console's
 * session route GET /llm/models carry each model's price for the caller in won per million tokens at today's
 * FX rate, less the caller's discount (organization keys: their organization's rules first; every key: the
 * rules for any account).
 */

let harness: GatewayHarness;

async function admin(method: string, path: string, body: unknown): Promise<number> {
  const response = await fetch(`${harness.url}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return response.status;
}

interface ModelBody {
  id: string;
  pricing: Record<string, string>;
}
type ModelsBody = { object: string; data: ModelBody[] } & ModelBody & { status: number };

async function getJson(path: string, token: string): Promise<{ status: number; body: ModelsBody }> {
  const response = await fetch(`${harness.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as ModelsBody };
}

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "model_prices",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  // Given: alpha-5.4 at $2.50 / $0.25 / $10 per million, ₩1,400 per dollar today, 15% off for hanbit.
  expect(
    await admin("PUT", "/models/alpha-5.4/price", {
      inputUsdPer1M: "2.5",
      cachedInputUsdPer1M: "0.25",
      outputUsdPer1M: "10",
    }),
  ).toBe(200);
  expect(await admin("PUT", "/discounts", { model: null, organizationId: "hanbit", rate: "0.15" })).toBe(200);
  // And 10% off gamma-4-3 for any organization: personal keys included (C7).
  expect(await admin("PUT", "/discounts", { model: "gamma-4-3", organizationId: null, rate: "0.1" })).toBe(
    200,
  );
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

describe("GET /llm/v1/models with prices", () => {
  it("given a personal key, when the official client lists the models, then each carries its won price at today's rate and no discount", async () => {
    const session = await harness.session("minji");
    const { key } = await harness.issueKey(session);

    const models = [];
    for await (const model of harness.openai(key).models.list()) models.push(model);

    expect(models.length).toBeGreaterThan(20);
    const alpha = models.find((model) => model.id === "alpha-5.4") as unknown as { pricing: unknown };
    expect(alpha).toMatchObject({ object: "model", owned_by: "alpha" });
    expect(alpha.pricing).toEqual({
      inputWonPerMillionTokens: "3500",
      cachedInputWonPerMillionTokens: "350",
      outputWonPerMillionTokens: "14000",
      inputUsdPerMillionTokens: "2.5",
      cachedInputUsdPerMillionTokens: "0.25",
      outputUsdPerMillionTokens: "10",
      fxRateKrwPerUsd: "1400",
      fxRateDate: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      discountRate: "0",
    });
    for (const model of models as unknown as { pricing: { inputWonPerMillionTokens: string } | null }[])
      expect(model.pricing?.inputWonPerMillionTokens).toMatch(/^\d+(\.\d{1,6})?$/);
  });

  it("given an organization key with a 15% discount, when the client retrieves a model, then its price is discounted", async () => {
    const session = await harness.session("joon", "hanbit");
    const { key } = await harness.issueKey(session, { isOrganization: true });

    const model = (await harness.openai(key).models.retrieve("alpha-5.4")) as unknown as {
      id: string;
      pricing: Record<string, string>;
    };

    expect(model.id).toBe("alpha-5.4");
    expect(model.pricing).toMatchObject({
      inputWonPerMillionTokens: "2975",
      cachedInputWonPerMillionTokens: "297.5",
      outputWonPerMillionTokens: "11900",
      discountRate: "0.15",
    });
  });

  it("given a rule for one model and any organization, then a personal key's price is discounted too, as docs/api.md says", async () => {
    const session = await harness.session("seoyeon");
    const { key } = await harness.issueKey(session);

    const model = (await harness.openai(key).models.retrieve("gamma-4-3")) as unknown as {
      pricing: Record<string, string>;
    };

    expect(model.pricing).toMatchObject({ discountRate: "0.1" });
    const modelsAndPrices = (await readFile("docs/api.md", "utf8")).split("### Models and prices")[1] ?? "";
    expect(modelsAndPrices).not.toMatch(/none for personal keys/);
    expect(modelsAndPrices).toMatch(/personal keys? (match|get)[^.]*any account/i);
  });
});

describe("GET /llm/models (session)", () => {
  it("given a session, then the console sees the same list, personal by default and the organization's on request", async () => {
    const session = await harness.session("joon", "hanbit");

    const personal = await getJson("/llm/models", session);
    const organization = await getJson("/llm/models?isOrganization=true", session);
    const one = await getJson("/llm/models/alpha-5.4?isOrganization=true", session);

    expect(personal.status).toBe(200);
    expect(personal.body.object).toBe("list");
    const alphaOf = (body: { data: ModelBody[] }) => body.data.find((model) => model.id === "alpha-5.4")!;
    expect(alphaOf(personal.body).pricing).toMatchObject({
      inputWonPerMillionTokens: "3500",
      discountRate: "0",
    });
    expect(alphaOf(organization.body).pricing).toMatchObject({
      inputWonPerMillionTokens: "2975",
      discountRate: "0.15",
    });
    expect(one.body).toEqual(alphaOf(organization.body));
  });

  it("refuses an unknown model with 404/120, a session without organization asking for one with 400/100, and no session with 401/110", async () => {
    const session = await harness.session("solo");
    expect(await getJson("/llm/models/no-such-model", session)).toMatchObject({
      status: 404,
      body: { status: 120 },
    });
    expect(await getJson("/llm/models?isOrganization=true", session)).toMatchObject({
      status: 400,
      body: { status: 100, message: expect.stringContaining("isOrganization") },
    });
    const anonymous = await fetch(`${harness.url}/llm/models`);
    expect(anonymous.status).toBe(401);
  });
});
