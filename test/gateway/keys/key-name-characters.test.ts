import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * A key's name is shown in the console, statements and CSV exports, so it may not hold characters that change
 * how it reads there: control characters (C0, DEL, C1) and the bidirectional controls (marks, embeddings,
 * overrides, isolates). Either door that names a key — POST /llm/apis and POST /admin/keys — refuses them
 * with 400/100 naming `name` and the character, and issues nothing; any other text is a name.
 */

let harness: GatewayHarness;
let session: string;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "key_name_characters",
    service: { adminToken: testSecrets.adminToken },
  });
  session = await harness.session("namer");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

const issueThroughAccount = (name: string) => callJson(harness.url, "POST", "/llm/apis", session, { name });
const issueThroughAdmin = (name: string) =>
  callJson(harness.url, "POST", "/admin/keys", testSecrets.adminToken, { account: "user:namer", name });

async function keyCount(): Promise<number> {
  const listed = await callJson(harness.url, "GET", "/llm/apis", session);
  return (listed.body.data as unknown[]).length;
}

const refusedCharacters = [
  0x01, 0x09, 0x0a, 0x1b, 0x1f, 0x7f, 0x85, 0x9f, 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d,
  0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
];
const codePointText = (codePoint: number) => `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;

describe("a key's name", () => {
  it.each(refusedCharacters.map((codePoint) => [codePointText(codePoint), codePoint]))(
    "given %s inside it, then both doors refuse it 400/100 naming the field and the character, and issue nothing",
    async (shown, codePoint) => {
      const name = `payroll${String.fromCodePoint(codePoint)}fdp.exe`;
      const before = await keyCount();
      for (const reply of [await issueThroughAccount(name), await issueThroughAdmin(name)]) {
        expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(reply.body).toMatchObject({
          status: 100,
          error: { code: 100, type: "invalid_request_error" },
        });
        expect(reply.body.message).toMatch(/^name: must not contain control characters/);
        expect(reply.body.message).toContain(`it has ${shown}`);
      }
      expect(await keyCount()).toBe(before);
    },
  );

  it("given NUL inside it, then both doors refuse it 400/100 naming the field", async () => {
    for (const reply of [await issueThroughAccount("a\u0000b"), await issueThroughAdmin("a\u0000b")]) {
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
      expect(reply.body.message).toMatch(/^name: /);
    }
  });

  it("given letters of any script, emoji and inner spaces, then it is the key's name, trimmed as before", async () => {
    const names = ["결제 서버", "مفتاح الإنتاج", "ключ 🔑 prod", "👩‍💻 laptop", "a\u00a0b"];
    for (const name of names) {
      const viaAccount = await issueThroughAccount(`  ${name} `);
      expect(viaAccount.status, JSON.stringify(viaAccount.body)).toBe(201);
      expect(viaAccount.body.name).toBe(name);
      const viaAdmin = await issueThroughAdmin(name);
      expect(viaAdmin.status, JSON.stringify(viaAdmin.body)).toBe(201);
      expect(viaAdmin.body.name).toBe(name);
    }
  });
});
