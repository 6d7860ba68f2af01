import fc from "fast-check";
import { expect } from "vitest";

/**
 * What the fuzz tests throw at every field: text PostgreSQL cannot store, 1 MB strings, 10,000 levels of
 * nesting, random text of any UTF-16 code unit and random JSON. A hostile value is a small description
 * (so fast-check prints a counterexample in a line) turned into the real thing only when a request is built.
 */

export const deepNestingLevels = 10_000;
/** Under the harness's 1 MiB body limit once quoted, so it reaches validation rather than the size check. */
export const megabyteCharacters = 1_000_000;

export type Hostile =
  | { kind: "nul" | "nul-inside" | "high-surrogate" | "low-surrogate" | "reversed-pair" | "megabyte-nul" }
  | { kind: "megabyte" | "deep-arrays" | "deep-objects" }
  | { kind: "text"; text: string }
  | { kind: "json"; value: unknown };

/** The kinds that carry a character PostgreSQL cannot store. */
export const unstorableKinds: ReadonlySet<Hostile["kind"]> = new Set([
  "nul",
  "nul-inside",
  "high-surrogate",
  "low-surrogate",
  "reversed-pair",
  "megabyte-nul",
]);

/** Any UTF-16 code unit, lone surrogates included (fast-check's own units are whole code points). */
const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));

export const hostileValue: fc.Arbitrary<Hostile> = fc.oneof(
  fc.constantFrom<Hostile>(
    { kind: "nul" },
    { kind: "nul-inside" },
    { kind: "high-surrogate" },
    { kind: "low-surrogate" },
    { kind: "reversed-pair" },
    { kind: "megabyte-nul" },
    { kind: "megabyte" },
    { kind: "deep-arrays" },
    { kind: "deep-objects" },
  ),
  fc.string({ unit: anyCodeUnit, maxLength: 24 }).map((text): Hostile => ({ kind: "text", text })),
  fc.jsonValue({ maxDepth: 2 }).map((value): Hostile => ({ kind: "json", value })),
);

/** The hostile value as a string, for a path segment or a query parameter. */
export function hostileText(hostile: Hostile): string {
  switch (hostile.kind) {
    case "nul":
      return "\u0000";
    case "nul-inside":
      return "team\u0000a";
    case "high-surrogate":
      return "team\uD800";
    case "low-surrogate":
      return "\uDC00team";
    case "reversed-pair":
      return "\uDC00\uD800";
    case "megabyte":
      return "x".repeat(megabyteCharacters);
    case "megabyte-nul":
      return `${"x".repeat(megabyteCharacters - 1)}\u0000`;
    case "deep-arrays":
      return "[".repeat(deepNestingLevels);
    case "deep-objects":
      return '{"a":'.repeat(deepNestingLevels);
    case "text":
      return hostile.text;
    case "json":
      return JSON.stringify(hostile.value) ?? "";
    default: {
      const unreachable: never = hostile;
      throw new Error(`unknown hostile value ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The hostile value as JSON text, to be spliced into a body (JSON.stringify would recurse 10,000 deep). */
export function hostileJson(hostile: Hostile): string {
  switch (hostile.kind) {
    case "deep-arrays":
      return `${"[".repeat(deepNestingLevels)}${"]".repeat(deepNestingLevels)}`;
    case "deep-objects":
      return `${'{"a":'.repeat(deepNestingLevels)}1${"}".repeat(deepNestingLevels)}`;
    case "json":
      return JSON.stringify(hostile.value) ?? "null";
    default:
      return JSON.stringify(hostileText(hostile));
  }
}

const placeholder = "\u0001hostile\u0001";

/**
 * A JSON body with `hostile` at `field` (a top-level field, or the whole body when undefined). Built with a
 * placeholder and spliced, so that a 10,000-level value never goes through JSON.stringify here.
 */
export function bodyWith(
  fields: Record<string, unknown>,
  field: string | undefined,
  hostile: Hostile,
): string {
  if (field === undefined) return hostileJson(hostile);
  return JSON.stringify({ ...fields, [field]: placeholder }).replace(JSON.stringify(placeholder), () =>
    hostileJson(hostile),
  );
}

/**
 * Percent-encoding that can carry a lone surrogate: a client can only send one as its 3-byte WTF-8 form,
 * which is not UTF-8 and which the server must refuse as such.
 */
export function percentEncoded(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    let encoded = "";
    for (let index = 0; index < text.length; index += 1) {
      const unit = text.charCodeAt(index);
      const next = text.charCodeAt(index + 1);
      if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        encoded += encodeURIComponent(text.slice(index, index + 2));
        index += 1;
      } else if (unit >= 0xd800 && unit <= 0xdfff) {
        encoded += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
          .map((byte) => `%${byte.toString(16).toUpperCase()}`)
          .join("");
      } else encoded += encodeURIComponent(text.charAt(index));
    }
    return encoded;
  }
}

export interface Answer {
  status: number;
  contentType: string;
  requestId: string | null;
  text: string;
}

export async function answerOf(response: Response): Promise<Answer> {
  return {
    status: response.status,
    contentType: response.headers.get("content-type") ?? "",
    requestId: response.headers.get("x-request-id"),
    text: await response.text(),
  };
}

const applicationCodes = [100, 110, 120, 300, 400, 401];

/** interface.md's error body: `{ status: <application code>, message }`, JSON, with the request's id. */
export function expectErrorBody(answer: Answer, context: string): void {
  expect(answer.contentType, context).toContain("application/json");
  expect(answer.requestId, context).toMatch(/^req_[0-9a-f]{32}$/);
  const body = JSON.parse(answer.text) as { status?: unknown; message?: unknown };
  expect(applicationCodes, context).toContain(body.status);
  expect(typeof body.message, context).toBe("string");
  expect(answer.text, context).not.toMatch(/at .*\.[jt]s:\d+|svc_[A-Za-z0-9_-]{20}|upstream-secret/);
}

/**
 * C3's fail-closed answer: the ledger's database cannot be reached (on a loaded shared machine it may not be,
 * for a while), or a write was recorded but its read models are behind (a parallel test's transaction holds
 * them back). Documented for every route that writes to the ledger, whatever the input, so the fuzz lets it
 * pass — an input that breaks a query is a 500, never this.
 */
export function isLedgerUnavailable(answer: Answer): boolean {
  if (answer.status !== 503) return false;
  const body = JSON.parse(answer.text) as { status?: unknown; message?: unknown };
  return (
    body.status === 300 &&
    typeof body.message === "string" &&
    (body.message.includes("ledger is unavailable") ||
      body.message.includes("read models have not caught up"))
  );
}

/** Fixed unless FUZZ_SEED / FUZZ_RUNS say otherwise (to search wider, or to replay a failure). */
export function fuzzSettings(defaultRuns: number): { seed: number; numRuns: number } {
  return {
    seed: Number(process.env.FUZZ_SEED ?? 20261123),
    numRuns: Number(process.env.FUZZ_RUNS ?? defaultRuns),
  };
}
