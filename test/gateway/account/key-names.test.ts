import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readUsageByDay } from "../../../src/billing/read-models/usage-by-day";
import { keyId, usageRecorded } from "../../billing/billing-ledger-fixtures";
import { type BillingApiHarness, chargeRecordedUsage, startBillingApi } from "../admin/billing-api-harness";

/**
 * Keys named beside their ids wherever charges are listed: the statement (JSON and CSV), the billing history
 * (JSON and the admin's CSV) and the usage by day — given a key that was charged and then deleted, as the
 * console's playground key is each time the playground opens again.
 */

let api: BillingApiHarness;
let token = "";
const owner = { kind: "user", id: "jun" } as const;
const keyName = "Console playground";

function keyEvent(type: "ApiKeyIssued" | "ApiKeyDeleted") {
  const metadata = { actor: "user:jun", occurredAt: "2026-11-20T01:30:00.000Z" };
  return {
    streamId: `apikey-${keyId}`,
    expectedVersion: "any" as const,
    events: [
      {
        eventId: randomUUID(),
        event:
          type === "ApiKeyIssued"
            ? {
                type,
                data: {
                  keyId,
                  owner,
                  issuedByUserId: owner.id,
                  name: keyName,
                  description: "",
                  keyHash: "ab".repeat(32),
                  keyPreview: "svc_abcd…wxyz",
                },
                metadata,
              }
            : { type, data: { keyId, owner }, metadata },
      },
    ],
  };
}

beforeAll(async () => {
  api = await startBillingApi("key_names");
  await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "3", outputUsdPer1M: "3" });
  await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" });
  await api.ledger.append(keyEvent("ApiKeyIssued"));
  await api.ledger.append(
    usageRecorded({ requestId: "req_named", account: owner, startedAt: "2026-11-20T02:00:00.000Z" }),
  );
  await chargeRecordedUsage(api, "req_named");
  // Deleted after its charge: it keeps its name in everything that lists the charge.
  await api.ledger.append(keyEvent("ApiKeyDeleted"));
  token = await api.session(owner.id, null);
  for (let attempt = 0; attempt < 200; attempt++) {
    const usage = await readUsageByDay(api.ledger.ledger.pool, owner, { from: undefined, to: undefined });
    const keys = await fetch(`${api.url}/llm/apis`, { headers: { authorization: `Bearer ${token}` } });
    const listed = ((await keys.json()) as { data?: unknown[] }).data ?? [];
    if (usage.length === 1 && listed.length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 60_000);

afterAll(async () => {
  await api?.close();
});

async function get(path: string): Promise<Response> {
  const response = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status, path).toBe(200);
  return response;
}

describe("a deleted key keeps its name beside its id", () => {
  it("in the statement, as JSON and as CSV", async () => {
    const statement = (await (await get("/llm/statements?account=personal&month=2026-11")).json()) as {
      chargesByKey: { keyId: string; keyName: string | null }[];
    };
    expect(statement.chargesByKey).toEqual([expect.objectContaining({ keyId, keyName })]);
    const csv = await (await get("/llm/statements?account=personal&month=2026-11&format=csv")).text();
    expect(csv).toMatch(new RegExp(`\\r\\ncharges_by_key,${keyId},,${keyName},1,[0-9.]+\\r\\n`));
  });

  it("in the billing history, the admin's CSV and the usage by day", async () => {
    const billing = (await (await get("/llm/billing")).json()) as {
      data: { keyId: string; keyName: string }[];
    };
    expect(billing.data).toEqual([expect.objectContaining({ keyId, keyName })]);
    const csv = await (await api.admin("GET", `/billing?account=user:${owner.id}&format=csv`)).text();
    const [header, row] = csv.split("\r\n");
    expect(header).toContain(",key_id,key_name,model,");
    expect(row).toContain(`,${keyId},${keyName},alpha-5.4,`);
    const usage = await readUsageByDay(api.ledger.ledger.pool, owner, { from: undefined, to: undefined });
    expect(usage).toEqual([expect.objectContaining({ keyId, keyName })]);
  });
});
