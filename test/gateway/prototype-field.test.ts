import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * A JSON body may carry the key `__proto__` as an own field (JSON.parse makes it one). Wherever a body is
 * closed — the generation bodies and their nested objects, key issuance, the admin and account bodies — it is
 * refused exactly as any other unknown field is: the same 400/100, the same message naming it.
 */

interface Reply {
  status: number;
  body: { status?: unknown; message?: unknown };
}

let harness: GatewayHarness;
let session: string;
let apiKey: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "prototype_field",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
  session = await harness.session("proto-owner", "proto-org");
  apiKey = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "proto-owner" }, "1000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

/** Sent as text: an object literal's `__proto__` would set its prototype, not send a field. */
async function send(method: string, path: string, bearer: string, rawBody: string): Promise<Reply> {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: rawBody,
  });
  return { status: response.status, body: (await response.json()) as Reply["body"] };
}

const chatMessages = '"messages":[{"role":"user","content":"hi"}]';
const generation = (path: string, body: string) => ({ method: "POST", path, body, bearer: () => apiKey });
const account = (method: string, path: string, body: string) => ({
  method,
  path,
  body,
  bearer: () => session,
});
const admin = (path: string, body: string) => ({
  method: "POST",
  path,
  body,
  bearer: () => testSecrets.adminToken,
});

/** Each door's body, with FIELD where the unknown field goes. */
const doors = {
  "chat completions": generation(
    "/llm/v1/chat/completions",
    `{"model":"alpha-5.4",${chatMessages},FIELD:{}}`,
  ),
  "a chat message": generation(
    "/llm/v1/chat/completions",
    '{"model":"alpha-5.4","messages":[{"role":"user","content":"hi",FIELD:{}}]}',
  ),
  "chat stream_options": generation(
    "/llm/v1/chat/completions",
    `{"model":"alpha-5.4","stream":true,"stream_options":{FIELD:{}},${chatMessages}}`,
  ),
  responses: generation("/llm/v1/responses", '{"model":"alpha-5.4","input":"hi",FIELD:{}}'),
  "responses stream_options": generation(
    "/llm/v1/responses",
    '{"model":"alpha-5.4","input":"hi","stream":true,"stream_options":{FIELD:{}}}',
  ),
  "a responses tool": generation(
    "/llm/v1/responses",
    '{"model":"alpha-5.4","input":"hi","tools":[{"type":"function","name":"f",FIELD:{}}]}',
  ),
  "responses reasoning": generation(
    "/llm/v1/responses",
    '{"model":"alpha-5.4","input":"hi","reasoning":{FIELD:{}}}',
  ),
  "key issuance": account("POST", "/llm/apis", '{"name":"laptop",FIELD:{}}'),
  "a member's role": account("PUT", "/llm/organization/members/someone", '{"role":"member",FIELD:{}}'),
  "the playground key": account("POST", "/llm/playground/key", "{FIELD:{}}"),
  "an alert threshold": account("PUT", "/llm/alerts", '{"balanceBelowWon":"5000",FIELD:{}}'),
  "an admin's key": admin("/admin/keys", '{"account":"user:someone","name":"laptop",FIELD:{}}'),
  "a sign-in link": admin("/admin/sign-in-links", '{"userId":"someone",FIELD:{}}'),
};

describe("a body field named __proto__", () => {
  it.each(Object.entries(doors))("is refused as any unknown field is: %s", async (_door, door) => {
    const withField = (field: string) =>
      send(door.method, door.path, door.bearer(), door.body.replace("FIELD", JSON.stringify(field)));
    const misspelt = await withField("misspelt");
    expect(misspelt.status, JSON.stringify(misspelt.body)).toBe(400);
    expect(misspelt.body.status).toBe(100);
    expect(misspelt.body.message).toContain("misspelt");

    const prototype = await withField("__proto__");
    expect({ status: prototype.status, body: prototype.body }).toEqual({
      status: 400,
      body: JSON.parse(JSON.stringify(misspelt.body).replaceAll("misspelt", "__proto__")),
    });
  });
});
