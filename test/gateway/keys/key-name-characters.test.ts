import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyTextLimits } from "../../../src/kernel/limits";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * A key's name and description are shown in the console, statements and CSV exports, so they may not hold
 * characters that change how they read there, or that cannot be seen: control characters (C0, DEL, C1), the
 * bidirectional controls (marks, embeddings, overrides, isolates), the line and paragraph separators, and
 * invisible characters (zero-width and the other default-ignorable code points), but for the joiners and
 * variation selectors that join letters or form an emoji. A name is one line; a description keeps its tabs
 * and line breaks. Either door that issues a key — POST /llm/apis and POST /admin/keys — refuses the rest
 * with 400/100 naming the field, the rule and the character, and issues nothing.
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

interface KeyText {
  name: string;
  description?: string;
}

const issueThroughAccount = (text: KeyText) => callJson(harness.url, "POST", "/llm/apis", session, text);
const issueThroughAdmin = (text: KeyText) =>
  callJson(harness.url, "POST", "/admin/keys", testSecrets.adminToken, { account: "user:namer", ...text });
const issueThroughBoth = async (text: KeyText) => [
  await issueThroughAccount(text),
  await issueThroughAdmin(text),
];

async function keyCount(): Promise<number> {
  const listed = await callJson(harness.url, "GET", "/llm/apis", session);
  return (listed.body.data as unknown[]).length;
}

const control = "control characters";
const bidirectional = "bidirectional controls";
const separator = "line or paragraph separators";
const invisible = "invisible characters";

/** Each character refused in a name, with the rule the refusal names. */
const refusedInNames: [number, string][] = [
  ...[0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f, 0x85, 0x9f].map((codePoint): [number, string] => [
    codePoint,
    control,
  ]),
  ...[0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069].map(
    (codePoint): [number, string] => [codePoint, bidirectional],
  ),
  [0x2028, separator],
  [0x2029, separator],
  // Zero-width space, (non-)joiners between Latin letters, word joiner, byte order mark, soft hyphen, Hangul
  // filler, a tag character, a variation selector after a letter.
  ...[0x200b, 0x200c, 0x200d, 0x2060, 0xfeff, 0x00ad, 0x3164, 0xe0041, 0xfe0f].map(
    (codePoint): [number, string] => [codePoint, invisible],
  ),
];
const codePointText = (codePoint: number) => `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;

function expectRefused(
  reply: { status: number; body: Record<string, unknown> },
  field: string,
  rule: string,
) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body).toMatchObject({ status: 100, error: { code: 100, type: "invalid_request_error" } });
  expect(reply.body.message).toMatch(new RegExp(`^${field}: must not contain ${rule}`));
}

describe("a key's name", () => {
  it.each(refusedInNames.map(([codePoint, rule]) => [codePointText(codePoint), codePoint, rule] as const))(
    "given %s inside it, then both doors refuse it 400/100 naming the field, the rule and the character, and issue nothing",
    async (shown, codePoint, rule) => {
      const before = await keyCount();
      for (const reply of await issueThroughBoth({
        name: `payroll${String.fromCodePoint(codePoint)}fdp.exe`,
      })) {
        expectRefused(reply, "name", rule);
        expect(reply.body.message).toContain(`it has ${shown}`);
      }
      expect(await keyCount()).toBe(before);
    },
  );

  it("given a name that looks like another but for a zero-width space, then it is refused, so the two cannot both be keys", async () => {
    for (const reply of await issueThroughBoth({ name: "결\u200B제 서버" }))
      expectRefused(reply, "name", invisible);
  });

  it("given NUL inside it, then both doors refuse it 400/100 naming the field", async () => {
    for (const reply of await issueThroughBoth({ name: "a\u0000b" })) {
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
      expect(reply.body.message).toMatch(/^name: /);
    }
  });

  it("given letters of any script, emoji and inner spaces, then it is the key's name, trimmed as before", async () => {
    const names = [
      "결제 서버",
      "مفتاح الإنتاج",
      "ключ 🔑 prod",
      "👩‍💻 laptop",
      "a\u00a0b",
      // Joiners and variation selectors where they do something: an emoji sequence with a skin tone, an
      // emoji's emoji form, a keycap, Persian's non-joiner, a Devanagari half form.
      "👩🏽‍💻 laptop",
      "❤️ prod",
      "1️⃣ first",
      "کلید می‌شود",
      "क्‍ष सर्वर",
    ];
    for (const name of names) {
      const viaAccount = await issueThroughAccount({ name: `  ${name} ` });
      expect(viaAccount.status, `${name}: ${JSON.stringify(viaAccount.body)}`).toBe(201);
      expect(viaAccount.body.name).toBe(name);
      const viaAdmin = await issueThroughAdmin({ name });
      expect(viaAdmin.status, `${name}: ${JSON.stringify(viaAdmin.body)}`).toBe(201);
      expect(viaAdmin.body.name).toBe(name);
    }
  });
});

describe("a key's name and description at their length bounds", () => {
  it("given a name of the bound's length once trimmed, then both doors issue it; one character more is 400/100 naming the name, and nothing is issued", async () => {
    const longest = "k".repeat(keyTextLimits.nameLengthMax);
    for (const reply of await issueThroughBoth({ name: ` ${longest} ` })) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      expect(reply.body.name).toBe(longest);
    }
    const countBefore = await keyCount();
    for (const reply of await issueThroughBoth({ name: `${longest}k` })) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
      expect(reply.body.message).toMatch(/^name: /);
    }
    expect(await keyCount()).toBe(countBefore);
  });

  it("given a description of the bound's length, then both doors issue it; one character more is 400/100 naming the description, and nothing is issued", async () => {
    const longest = "d".repeat(keyTextLimits.descriptionLengthMax);
    for (const reply of await issueThroughBoth({ name: "bounded", description: longest })) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      expect(reply.body.description).toBe(longest);
    }
    const countBefore = await keyCount();
    for (const reply of await issueThroughBoth({ name: "bounded", description: `${longest}d` })) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
      expect(reply.body.message).toMatch(/^description: /);
    }
    expect(await keyCount()).toBe(countBefore);
  });
});

describe("a key's description", () => {
  const refusedInDescriptions: [string, string, string][] = [
    ["a bell", "ring\u0007", control],
    ["an escape", "\u001b[31mred", control],
    ["a carriage return that writes over the line", "ok\rEVIL", control],
    ["a next-line (C1)", "one\u0085two", control],
    ["a right-to-left override", "invoice\u202Efdp.exe", bidirectional],
    ["a line separator", "one\u2028two", separator],
    ["a paragraph separator", "one\u2029two", separator],
    ["a zero-width space", "pay\u200Broll", invisible],
    ["a byte order mark", "\uFEFFpayroll", invisible],
  ];

  it.each(refusedInDescriptions)(
    "given %s inside it, then both doors refuse it 400/100 naming the field, the rule and the character, and issue nothing",
    async (_what, description, rule) => {
      const before = await keyCount();
      for (const reply of await issueThroughBoth({ name: "described", description }))
        expectRefused(reply, "description", rule);
      expect(await keyCount()).toBe(before);
    },
  );

  it("given lines broken by \\n or \\r\\n, tabs, and letters and emoji of any script, then it is the key's description, as typed", async () => {
    const descriptions = [
      "Payroll batch\nruns nightly",
      "line one\r\nline two\r\n",
      "column\tcolumn",
      "  결제 서버용 👩‍💻 ",
      "کلید می‌شود",
    ];
    for (const description of descriptions) {
      for (const reply of await issueThroughBoth({ name: "described", description })) {
        expect(reply.status, `${JSON.stringify(description)}: ${JSON.stringify(reply.body)}`).toBe(201);
        expect(reply.body.description).toBe(description);
      }
    }
  });
});
