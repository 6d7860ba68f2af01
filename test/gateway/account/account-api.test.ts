import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { usageRecorded } from "../../billing/billing-ledger-fixtures";
import { type BillingApiHarness, chargeRecordedUsage, startBillingApi } from "../admin/billing-api-harness";

/** The session's own finance (C4): `GET /llm/balance` and `GET /llm/billing`, through the real HTTP edge. */

let api: BillingApiHarness;
let sequence = 0;

beforeEach(async () => {
  api = await startBillingApi(`account_api_${sequence++}`);
});

afterEach(async () => {
  await api.close();
});

async function get(path: string, token: string | undefined): Promise<Response> {
  return fetch(
    `${api.url}/llm${path}`,
    token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  );
}

async function givenChargedUsage(requestId: string, account: { kind: "user" | "organization"; id: string }) {
  await api.ledger.append(
    usageRecorded({
      requestId,
      account,
      tokens: { input: 1_000_000, cached: 0, output: 0, reasoning: 0 },
      startedAt: "2026-11-20T02:00:00.000Z",
    }),
  );
  await chargeRecordedUsage(api, requestId);
}

describe("GET /llm/balance", () => {
  it("shows the user's balance and the session organization's", async () => {
    // Given
    await api.admin("POST", "/accounts/user/dave/credits", { amountWon: "1500.25" });
    await api.admin("POST", "/accounts/organization/umbrella/credits", { amountWon: "70000" });

    // When
    const withOrganization = await get("/balance", await api.session("dave", "umbrella"));
    const personal = await get("/balance", await api.session("dave", null));

    // Then
    const nothingInFlight = { heldWon: "0", pendingWon: "0" };
    expect(await withOrganization.json()).toEqual({
      user: { id: "dave", balanceWon: "1500.25", ...nothingInFlight },
      organization: { id: "umbrella", balanceWon: "70000", ...nothingInFlight },
    });
    expect(await personal.json()).toEqual({
      user: { id: "dave", balanceWon: "1500.25", ...nothingInFlight },
      organization: null,
    });
  });

  it("refuses a request without a session with 401/110", async () => {
    const response = await get("/balance", undefined);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ status: 110 });
  });
});

describe("GET /llm/billing", () => {
  beforeEach(async () => {
    await api.admin("PUT", "/models/alpha-5.4/price", { inputUsdPer1M: "3", outputUsdPer1M: "3" });
    await api.admin("POST", "/fx-rates", { appliesOn: "2026-11-20", rate: "1000" });
  });

  it("lists the caller's own charges, personal or organization, with their breakdown", async () => {
    // Given
    await givenChargedUsage("req_dave", { kind: "user", id: "dave" });
    await givenChargedUsage("req_erin", { kind: "user", id: "erin" });
    await givenChargedUsage("req_umbrella", { kind: "organization", id: "umbrella" });
    const token = await api.session("dave", "umbrella");

    // When
    const personal = await eventuallyRows("/billing", token, 1);
    const organization = await eventuallyRows("/billing?isOrganization=true", token, 1);

    // Then
    expect(personal.map((row) => row.requestId)).toEqual(["req_dave"]);
    expect(personal[0]).toMatchObject({
      amountWon: "3000",
      breakdown: { fxRateKrwPerUsd: "1000", usd: "3" },
    });
    expect(organization.map((row) => row.requestId)).toEqual(["req_umbrella"]);
  });

  it("refuses isOrganization=true without an organization, and a bad range, with 400/100", async () => {
    const token = await api.session("dave", null);
    for (const path of [
      "/billing?isOrganization=true",
      "/billing?isOrganization=maybe",
      "/billing?from=11/20",
      "/billing?from=0000-01-01T00:00:00Z",
      "/billing?to=9999-12-31T23:00:00-09:00",
      `/billing?limit=10&cursor=${forgedCursor("2026-99-99T99:99:99.999999Z")}`,
      `/billing?limit=10&cursor=${forgedCursor("2026-02-30T00:00:00.000000Z")}`,
    ]) {
      const response = await get(path, token);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ status: 100 });
    }
  });
});

/** A cursor of the shape the billing pages hand out, over an instant that never was. */
function forgedCursor(startedAt: string): string {
  return Buffer.from(JSON.stringify([startedAt, "req_forged"])).toString("base64url");
}

async function eventuallyRows(
  path: string,
  token: string,
  count: number,
): Promise<Record<string, unknown>[]> {
  let rows: Record<string, unknown>[] = [];
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const response = await get(path, token);
    expect(response.status).toBe(200);
    rows = ((await response.json()) as { data: Record<string, unknown>[] }).data;
    if (rows.length >= count) return rows;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return rows;
}
