import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../../src/config";
import type { ActivityEntry, ActivityPage } from "../../../src/gateway/activity/activity-read-model";
import { installModels } from "../../../src/providers/catalog";
import { loadModelsFile } from "../../../src/providers/models-file";
import type { ModelFamily } from "../../../src/providers/provider";
import { type Simulator, startSimulator } from "../../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";

/**
 * The activity log of a request a configured fallback answered (docs/upstream-resilience.md, "Fallbacks"):
 * the row names the model requested and the one that answered, whose charge its `costWon` is, so that it
 * reconciles with the billing history, which names the model charged.
 */

type BillingLine = { requestId: string; model: string; amountWon: string };

let simulator: Simulator;
let failing: FaultyUpstream;
let harness: GatewayHarness;
let modelsDirectory: string;

beforeAll(async () => {
  simulator = await startSimulator({});
  failing = await startFaultyUpstream(simulator.url);
  failing.setPlan(() => ({ kind: "status", status: 503 }));
  // As MODELS_FILE gives it at start: zeta-mini falls back to gamma-4-3 (another family, another price).
  modelsDirectory = await mkdtemp(join(tmpdir(), "activity-fallback-"));
  const modelsFile = join(modelsDirectory, "models.yaml");
  await writeFile(
    modelsFile,
    "models:\n  zeta-mini:\n    family: zeta\n    protocol: chat-completions\n    fallbacks: [gamma-4-3]\n",
  );
  installModels(await loadModelsFile(modelsFile, {}));
  harness = await startGatewayHarness({
    label: "activity_fallback",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      upstreams: Object.fromEntries(
        modelFamilies.map((family) => [
          family,
          { baseUrl: family === "zeta" ? failing.url : simulator.url, apiKey: `secret-${family}` },
        ]),
      ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
    },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
  await failing?.close();
  await simulator?.close();
  await rm(modelsDirectory, { recursive: true, force: true });
});

async function get<Body>(path: string, token: string): Promise<Body> {
  const response = await fetch(`${harness.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status, path).toBe(200);
  return (await response.json()) as Body;
}

/** The activity rows of these requests once each is charged (rows and charges land off the request path). */
async function chargedRows(session: string, requestIds: readonly string[]): Promise<ActivityEntry[]> {
  let rows: ActivityEntry[] = [];
  await expect
    .poll(
      async () => {
        const page = await get<ActivityPage>("/llm/usage/activity", session);
        rows = requestIds.map((requestId) => page.data.find((row) => row.requestId === requestId)!);
        return rows.every((row) => row?.costWon != null);
      },
      { timeout: 30_000, interval: 100 },
    )
    .toBe(true);
  return rows;
}

describe("GET /llm/usage/activity of a request a fallback answered", () => {
  it("given zeta-mini failing with 503s and gamma-4-3 its fallback, when a request for zeta-mini is answered, then its row names zeta-mini as requested and gamma-4-3 as answeredBy, with gamma-4-3's charge, and answeredBy=gamma-4-3 lists it", async () => {
    // Given
    const session = await harness.session("fallen-back");
    const { key } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: "fallen-back" }, "100000");
    const client = harness.openai(key);
    const messages = [{ role: "user" as const, content: "Fall back" }];

    // When: one JSON and one streamed request for zeta-mini, one for gamma-4-3 itself
    const json = await client.chat.completions.create({ model: "zeta-mini", messages }).withResponse();
    const stream = await client.chat.completions
      .create({ model: "zeta-mini", messages, stream: true })
      .withResponse();
    for await (const _chunk of stream.data);
    const direct = await client.chat.completions.create({ model: "gamma-4-3", messages }).withResponse();
    const [jsonId, streamId, directId] = [json, stream, direct].map(
      ({ response }) => response.headers.get("x-request-id")!,
    );

    // Then: the reply names the model that answered (docs/upstream-resilience.md, "Billing a fallback")
    expect(json.data.model).toBe("gamma-4-3");
    const rows = await chargedRows(session, [jsonId!, streamId!, directId!]);
    expect(rows.map((row) => [row.model, row.answeredBy, row.outcome])).toEqual([
      ["zeta-mini", "gamma-4-3", "served"],
      ["zeta-mini", "gamma-4-3", "served"],
      ["gamma-4-3", null, "served"],
    ]);
    // The activity log reconciles with the billing history: the same charge, the charged model named.
    const billing = await get<{ data: BillingLine[] }>("/llm/billing", session);
    for (const row of rows) {
      const line = billing.data.find((charge) => charge.requestId === row.requestId)!;
      expect(line.model).toBe(row.answeredBy ?? row.model);
      expect(line.amountWon).toBe(row.costWon);
    }

    // The model filter is the model requested: zeta-mini lists the requests for it, whoever answered
    const requested = await get<ActivityPage>("/llm/usage/activity?model=zeta-mini", session);
    expect(requested.data.map((row) => row.requestId)).toEqual([streamId, jsonId]);
    const answering = await get<ActivityPage>("/llm/usage/activity?model=gamma-4-3", session);
    expect(answering.data.map((row) => row.requestId)).toEqual([directId]);
    // answeredBy lists the requests a fallback answered as that model, whichever model they asked for
    const fellBack = await get<ActivityPage>("/llm/usage/activity?answeredBy=gamma-4-3", session);
    expect(fellBack.data.map((row) => row.requestId)).toEqual([streamId, jsonId]);
    const none = await get<ActivityPage>("/llm/usage/activity?answeredBy=zeta-mini", session);
    expect(none.data).toEqual([]);
  }, 60_000);
});
