import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ProjectionLagError } from "../../src/ledger/projection/projection-waiter";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { callJson } from "../support/json-call";

/**
 * A new key's value and a new webhook endpoint's signing secret are shown once, in the answer that creates
 * them. When the read models lag past the wait (or reading back fails) once the change is recorded, that
 * answer still carries the secret: a 503 there left a key or an endpoint whose secret nobody could ever read.
 */

let harness: GatewayHarness;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "secret_despite_lag",
    service: { webhookAllowPrivateNetworks: true },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

function readModelsLag() {
  vi.spyOn(harness.service.waiter, "waitFor").mockRejectedValue(
    new ProjectionLagError(["active-keys", "key-lists", "alert-settings"], 10_000),
  );
}

describe("a create whose answer shows its secret once, when the read models lag", () => {
  it("given lagging read models, when a key is issued, then the answer carries the key, which calls once they catch up", async () => {
    const session = await harness.session("lag-key-owner");
    readModelsLag();

    const issued = await callJson(harness.url, "POST", "/llm/apis", session, {
      name: "issued while lagging",
      isOrganization: false,
    });

    expect(issued.status).toBe(201);
    expect(issued.body).toMatchObject({ name: "issued while lagging", status: 1 });
    expect(issued.body.key).toMatch(/^svc_/);
    vi.restoreAllMocks();
    const modelsStatus = async () =>
      (
        await fetch(`${harness.url}/llm/v1/models`, {
          headers: { authorization: `Bearer ${String(issued.body.key)}` },
        })
      ).status;
    await expect.poll(modelsStatus, { timeout: 10_000 }).toBe(200);
    const listed = async () =>
      (await callJson(harness.url, "GET", "/llm/apis?isOrganization=false", session)).body.data as {
        uuid: string;
      }[];
    await expect
      .poll(async () => (await listed()).map((key) => key.uuid), { timeout: 10_000 })
      .toEqual([issued.body.uuid]);
  });

  it("given lagging read models, when a webhook endpoint is added, then the answer carries its secret and the endpoint the list shows", async () => {
    const session = await harness.session("lag-webhook-owner");
    readModelsLag();

    const added = await callJson(harness.url, "POST", "/llm/webhooks", session, {
      url: "http://127.0.0.1:9/added-while-lagging",
      events: ["balance.low", "balance.low"],
      isOrganization: false,
    });

    expect(added.status).toBe(201);
    expect(String(added.body.secret)).toMatch(/^whsec_/);
    vi.restoreAllMocks();
    const { secret, ...endpoint } = added.body;
    const listed = async () =>
      (await callJson(harness.url, "GET", "/llm/webhooks?isOrganization=false", session)).body.data;
    await expect.poll(listed, { timeout: 10_000 }).toEqual([endpoint]);
  });
});
