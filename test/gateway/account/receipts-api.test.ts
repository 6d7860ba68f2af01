import path from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChargeReceipt } from "../../../src/billing/receipts/charge-receipt";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * Receipts through the real gateway: a request made with the official client and charged by the real
 * workers, its receipt fetched with the key that made it, checked by the stand-alone verifier against the
 * key published at /ledger/public-key; then refused to anyone else, and failing, with the reason, once the
 * charge has been edited in the database.
 */

const signingKey = LedgerSigningKey.parse(Buffer.alloc(32, 21).toString("base64"));
type StandaloneFailures = (receipt: unknown, publicKeyPem: string) => string[];
let standaloneFailures: StandaloneFailures;
let harness: GatewayHarness;
let ownerKey: string;
let ownerSession: string;
let requestId: string;
/** The completion's body id, what the SDK shows of the request. */
let completionId: string;

async function receipt(authorization: string, id = requestId): Promise<Response> {
  return fetch(`${harness.url}/llm/receipts/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${authorization}` },
  });
}

/**
 * The receipt once the charge is posted and sealed (the checkpointer seals within about a second of the
 * charge; the charge itself may wait for the sweeper under the suite's load).
 */
async function sealedReceipt(authorization = ownerKey, id = requestId): Promise<ChargeReceipt> {
  for (let attempt = 0; attempt < 450; attempt++) {
    const response = await receipt(authorization, id);
    if (response.status === 200) {
      const body = (await response.json()) as ChargeReceipt;
      if (body.charges.every((charge) => charge.seal.status === "sealed")) return body;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("no sealed receipt within 45 s");
}

beforeAll(async () => {
  standaloneFailures = (
    (await import(pathToFileURL(path.resolve("src/billing/receipts/verify-receipt.mjs")).href)) as {
      receiptFailures: StandaloneFailures;
    }
  ).receiptFailures;
  harness = await startGatewayHarness({
    label: "receipts_api",
    billing: {},
    service: { adminToken: testSecrets.adminToken, ledgerSigningKey: signingKey },
  });
  ownerSession = await harness.session("receipt-owner");
  ownerKey = (await harness.issueKey(ownerSession)).key;
  await harness.topUp({ kind: "user", id: "receipt-owner" }, "10000");
  const completion = await harness
    .openai(ownerKey)
    .chat.completions.create({
      model: "alpha-5.4",
      messages: [{ role: "user", content: "a receipt, please" }],
    })
    .withResponse();
  requestId = completion.response.headers.get("x-request-id")!;
  completionId = completion.data.id;
}, 60_000);

/** Asks until the answer is 200 (the charge and the activity row land within about a second). */
async function untilFound(authorization: string, id: string): Promise<unknown> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const response = await receipt(authorization, id);
    if (response.status === 200) return response.json();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no receipt for ${id} within 30 s`);
}

/** A chat completion by `key`: its x-request-id and its body id. */
async function complete(key: string): Promise<{ requestId: string; responseId: string }> {
  const completion = await harness
    .openai(key)
    .chat.completions.create({ model: "alpha-5.4", messages: [{ role: "user", content: "another" }] })
    .withResponse();
  return { requestId: completion.response.headers.get("x-request-id")!, responseId: completion.data.id };
}

async function shareResponseId(requestIdOfRow: string, responseId: string): Promise<void> {
  const client = new pg.Client({ connectionString: harness.database.url });
  await client.connect();
  try {
    // The request log is written off the request path, in batches: its row may land after the charge.
    await expect
      .poll(
        async () =>
          (
            await client.query("UPDATE request_log SET response_id = $2 WHERE request_id = $1", [
              requestIdOfRow,
              responseId,
            ])
          ).rowCount,
        { timeout: 30_000, interval: 100 },
      )
      .toBe(1);
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await harness?.close();
});

describe("GET /ledger/public-key", () => {
  it("publishes the checkpoint signing key's public half as PEM, without authentication", async () => {
    const response = await fetch(`${harness.url}/ledger/public-key`);
    expect(response.status).toBe(200);
    const pem = await response.text();
    expect(pem).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
  });
});

describe("GET /llm/receipts/{requestId}", () => {
  it("given a charged request, then its key gets a receipt the stand-alone verifier finds valid", {
    timeout: 60_000,
  }, async () => {
    const body = await sealedReceipt();
    const pem = await (await fetch(`${harness.url}/ledger/public-key`)).text();
    expect(body).toMatchObject({
      format: "won-ledger-receipt/1",
      requestId,
      account: { kind: "user", id: "receipt-owner" },
      model: "alpha-5.4",
      publicKeyPath: "/ledger/public-key",
    });
    expect(body.charges).toHaveLength(1);
    expect(body.charges[0]!.breakdown).toMatchObject({
      fxRateKrwPerUsd: expect.any(String),
      fxRateDate: expect.any(String),
      discountRate: expect.any(String),
      amountWon: body.amountWon,
    });
    expect(standaloneFailures(body, pem)).toEqual([]);
  });

  it("given an organization's discount, then its receipt shows the charge's discount and the verifier finds it valid", {
    timeout: 60_000,
  }, async () => {
    // Given: an organization paying half its price
    const session = await harness.session("receipt-member", "receipt-org");
    await harness.topUp({ kind: "organization", id: "receipt-org" }, "10000");
    const discounted = await callJson(harness.url, "PUT", "/admin/discounts", testSecrets.adminToken, {
      model: null,
      organizationId: "receipt-org",
      rate: "0.5",
    });
    expect(discounted.status).toBe(200);
    const key = (await harness.issueKey(session, { isOrganization: true })).key;

    // When
    const charged = await complete(key);
    const body = await sealedReceipt(key, charged.requestId);

    // Then: the breakdown a reader sees is the charge's, and the verifier compares it with the signed event
    expect(body.charges).toHaveLength(1);
    expect(body.charges[0]!.breakdown.discountRate).toBe("0.5");
    const pem = await (await fetch(`${harness.url}/ledger/public-key`)).text();
    expect(standaloneFailures(body, pem)).toEqual([]);
  });

  it("gives the same receipt to a session of the paying account", async () => {
    const response = await receipt(ownerSession);
    expect(response.status).toBe(200);
    expect(((await response.json()) as ChargeReceipt).requestId).toBe(requestId);
  });

  it("given the id the SDK shows (chatcmpl-…), then the key and the session get the same receipt; a stranger 404/120", {
    timeout: 60_000,
  }, async () => {
    expect(completionId).toMatch(/^chatcmpl-\d+$/);
    const sameCharges = (receipt: unknown) => {
      const { requestId: named, amountWon, charges } = receipt as ChargeReceipt;
      return { named, amountWon, events: charges.map((charge) => charge.event) };
    };
    const byRequestId = sameCharges(await untilFound(ownerKey, requestId));

    expect(sameCharges(await untilFound(ownerKey, completionId))).toEqual(byRequestId);
    expect(sameCharges(await untilFound(ownerSession, completionId))).toEqual(byRequestId);
    const strangerKey = (await harness.issueKey(await harness.session("receipt-stranger"))).key;
    const stranger = await receipt(strangerKey, completionId);
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toMatchObject({ status: 120 });
  });

  it("given two of the caller's requests on different gateways that share one response id, then both are listed, in the receipts and the activity log; another account's is not", {
    timeout: 60_000,
  }, async () => {
    const second = await complete(ownerKey);
    const neighbourSession = await harness.session("receipt-neighbour");
    const neighbourKey = (await harness.issueKey(neighbourSession)).key;
    await harness.topUp({ kind: "user", id: "receipt-neighbour" }, "1000");
    const neighbours = await complete(neighbourKey);
    for (const [key, charged] of [
      [ownerKey, second.requestId],
      [neighbourKey, neighbours.requestId],
    ] as const) {
      await untilFound(key, charged);
      // What a second gateway stamping the same millisecond writes: the same body id on another request.
      await shareResponseId(charged, completionId);
    }

    const listed = (await untilFound(ownerKey, completionId)) as { object: string; data: ChargeReceipt[] };

    expect(listed.object).toBe("list");
    expect(listed.data.map((each) => each.requestId)).toEqual([requestId, second.requestId]);
    const activity = await fetch(`${harness.url}/llm/usage/activity?requestId=${completionId}`, {
      headers: { authorization: `Bearer ${ownerSession}` },
    });
    const rows = ((await activity.json()) as { data: { requestId: string; responseId: string }[] }).data;
    expect(rows.map((row) => row.requestId).sort()).toEqual([requestId, second.requestId].sort());
    expect(rows.every((row) => row.responseId === completionId)).toBe(true);
    const neighbour = (await untilFound(neighbourKey, completionId)) as ChargeReceipt;
    expect(neighbour.requestId).toBe(neighbours.requestId);
  });

  it("refuses another user's session and key with 404/120, as for a request that does not exist", async () => {
    const strangerSession = await harness.session("receipt-stranger");
    const strangerKey = (await harness.issueKey(strangerSession)).key;
    for (const credential of [strangerSession, strangerKey]) {
      const response = await receipt(credential);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ status: 120 });
    }
    const unknown = await receipt(ownerKey, "no-such-request");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ status: 120 });
    expect((await fetch(`${harness.url}/llm/receipts/${requestId}`)).status).toBe(401);
  });

  it("given an id with no receipt, then 404/120 says a request is charged in the seconds after its answer, to ask again then", async () => {
    // The owner asking right after the answer gets this too: the charge is posted after the response.
    const unknown = await receipt(ownerKey, "req_00000000000000000000000000000000");
    expect(unknown.status).toBe(404);
    const body = (await unknown.json()) as { status: number; message: string };
    expect(body.status).toBe(120);
    expect(body.message).toMatch(/not charged yet \(.*seconds after its answer.*ask again.*\) or not yours$/);
  });

  it("given the charge edited in the database afterwards, then its receipt fails verification and says why", async () => {
    const pem = await (await fetch(`${harness.url}/ledger/public-key`)).text();
    const client = new pg.Client({ connectionString: harness.database.url });
    await client.connect();
    try {
      await client.query("BEGIN");
      await client.query("ALTER TABLE ledger_events DISABLE TRIGGER ledger_events_immutable");
      await client.query(
        `UPDATE ledger_events SET data = replace(data::text, '"amountWon":"', '"amountWon":"1')::json
         WHERE stream_id = $1 AND type = 'UsageCharged'`,
        [`usage-${requestId}`],
      );
      await client.query("ALTER TABLE ledger_events ENABLE TRIGGER ledger_events_immutable");
      await client.query("COMMIT");
    } finally {
      await client.end();
    }
    const response = await receipt(ownerKey);
    expect(response.status).toBe(200);
    const failures = standaloneFailures(await response.json(), pem);
    expect(failures).toContainEqual(
      expect.stringMatching(
        /^chain: charge 1 \(UsageCharged .*\): the event's bytes do not hash to its chain hash/,
      ),
    );
    expect(failures).toContainEqual(
      expect.stringMatching(/^amount: charge 1 .*: breakdown.amountWon 1\d*\.\d+ is not /),
    );
  });
});
