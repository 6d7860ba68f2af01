import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { limits } from "../../../src/kernel/limits";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { answerOf, expectErrorBody, fuzzSettings } from "./support/hostile-values";

/**
 * JSON nested thousands of levels deep in every field of either generation endpoint that takes JSON — the
 * free-form ones (a JSON schema, a tool's parameters) and every other — is refused at validation with
 * 400/100, a free-form field's message naming the field and the limit: never a 500 (a deep schema used to
 * overflow the stack when the upstream request was serialised), and nothing sent upstream.
 */

let harness: GatewayHarness;
let key: string;
const depthMax = limits.requestJsonNestingDepthMax;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "deep_nesting" });
  const session = await harness.session("deep-nester");
  key = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "deep-nester" }, "1000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
});

const placeholder = "\u0001deep\u0001";
const user = { role: "user", content: "Hello" };

interface JsonField {
  path: "/chat/completions" | "/responses";
  /** The field as an error names it; free-form fields' messages must name it with the limit. */
  field: string;
  freeForm: boolean;
  /** The body, with `placeholder` where the deep value goes. */
  body: (model: string) => Record<string, unknown>;
}

const chatFields: JsonField[] = (
  [
    {
      field: "response_format.json_schema.schema",
      freeForm: true,
      body: (model) => ({
        model,
        messages: [user],
        response_format: { type: "json_schema", json_schema: { name: "answer", schema: placeholder } },
      }),
    },
    {
      field: "tools.0.function.parameters",
      freeForm: true,
      body: (model) => ({
        model,
        messages: [user],
        tools: [{ type: "function", function: { name: "lookup", parameters: placeholder } }],
      }),
    },
    {
      field: "metadata.note",
      freeForm: false,
      body: (model) => ({ model, messages: [user], metadata: { note: placeholder } }),
    },
    {
      field: "logit_bias",
      freeForm: false,
      body: (model) => ({ model, messages: [user], logit_bias: { "50256": placeholder } }),
    },
    {
      field: "messages.0.content",
      freeForm: false,
      body: (model) => ({ model, messages: [{ role: "user", content: placeholder }] }),
    },
    {
      field: "tool_choice",
      freeForm: false,
      body: (model) => ({ model, messages: [user], tool_choice: placeholder }),
    },
    { field: "stop", freeForm: false, body: (model) => ({ model, messages: [user], stop: placeholder }) },
  ] satisfies Omit<JsonField, "path">[]
).map((field) => ({ ...field, path: "/chat/completions" as const }));

const responsesFields: JsonField[] = (
  [
    {
      field: "text.format.schema",
      freeForm: true,
      body: (model) => ({
        model,
        input: "Hello",
        text: { format: { type: "json_schema", name: "answer", schema: placeholder } },
      }),
    },
    {
      field: "tools.0.parameters",
      freeForm: true,
      body: (model) => ({
        model,
        input: "Hello",
        tools: [{ type: "function", name: "lookup", parameters: placeholder }],
      }),
    },
    {
      field: "metadata.note",
      freeForm: false,
      body: (model) => ({ model, input: "Hello", metadata: { note: placeholder } }),
    },
    { field: "input", freeForm: false, body: (model) => ({ model, input: placeholder }) },
    {
      field: "input.0.content",
      freeForm: false,
      body: (model) => ({ model, input: [{ role: "user", content: placeholder }] }),
    },
    {
      field: "tool_choice",
      freeForm: false,
      body: (model) => ({ model, input: "Hello", tool_choice: placeholder }),
    },
    {
      field: "reasoning",
      freeForm: false,
      body: (model) => ({ model, input: "Hello", reasoning: placeholder }),
    },
  ] satisfies Omit<JsonField, "path">[]
).map((field) => ({ ...field, path: "/responses" as const }));

const jsonFields = [...chatFields, ...responsesFields];

type Shape = "arrays" | "objects" | "schemas";

/** JSON text of `depth` nested containers (written out: JSON.stringify would itself recurse that deep). */
function nestedJson(shape: Shape, depth: number): string {
  switch (shape) {
    case "arrays":
      return `${"[".repeat(depth)}${"]".repeat(depth)}`;
    case "objects":
      return `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
    case "schemas": {
      // A JSON schema as a client would write one, each level an object property of the one above: two
      // containers per level, so `depth` containers in all.
      const levels = Math.floor((depth - 1) / 2);
      const open = '{"type":"object","properties":{"x":'.repeat(levels);
      const innermost = depth % 2 === 1 ? '{"type":"string"}' : '{"type":"object","properties":{}}';
      return `${open}${innermost}${"}}".repeat(levels)}`;
    }
    default: {
      const unreachable: never = shape;
      throw new Error(`unknown shape ${String(unreachable)}`);
    }
  }
}

async function send(field: JsonField, model: string, deepJson: string) {
  const body = JSON.stringify(field.body(model)).replace(JSON.stringify(placeholder), () => deepJson);
  const response = await fetch(`${harness.baseUrl}${field.path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body,
  });
  return answerOf(response);
}

function expectRefusedForDepth(
  field: JsonField,
  shape: Shape,
  answer: Awaited<ReturnType<typeof send>>,
  context: string,
) {
  expect({ status: answer.status, code: JSON.parse(answer.text).status }, context).toEqual({
    status: 400,
    code: 100,
  });
  expectErrorBody(answer, context);
  // An array where a schema object belongs is refused for its type, before its depth is looked at.
  if (field.freeForm && shape !== "arrays") {
    const { message } = JSON.parse(answer.text) as { message: string };
    expect(message, context).toBe(
      `${field.field}: must be nested at most ${depthMax} levels deep (objects and arrays)`,
    );
  }
}

describe("JSON nested deeper than the limit", () => {
  it("given 5,000 levels in each field that takes JSON, on both endpoints, then 400/100 (the free-form field named with the limit), never a 500", async () => {
    for (const field of jsonFields) {
      for (const shape of ["arrays", "objects", "schemas"] as const) {
        const context = `${field.path} ${field.field} ${shape}`;
        const answer = await send(field, "alpha-5.4-mini", nestedJson(shape, 5_000));
        expectRefusedForDepth(
          field,
          shape,
          answer,
          `${context}: ${answer.status} ${answer.text.slice(0, 200)}`,
        );
      }
    }
  }, 120_000);

  it("given any depth past the limit, shape, model and field, then never a 5xx: 400/100", async () => {
    const request = fc.record({
      field: fc.constantFrom(...jsonFields),
      shape: fc.constantFrom<Shape>("arrays", "objects", "schemas"),
      depth: fc.oneof(
        fc.integer({ min: depthMax + 1, max: depthMax + 4 }),
        fc.integer({ min: depthMax + 1, max: 20_000 }),
      ),
      model: fc.constantFrom(
        "alpha-5.4-mini",
        "alpha-5.4-pro",
        "beta-3-flash",
        "delta-4.5-haiku",
        "zeta-mini",
      ),
    });
    await fc.assert(
      fc.asyncProperty(request, async ({ field, shape, depth, model }) => {
        const answer = await send(field, model, nestedJson(shape, depth));
        const context = `${field.path} ${field.field} ${shape} ${depth} ${model}: ${answer.status} ${answer.text.slice(0, 200)}`;
        expectRefusedForDepth(field, shape, answer, context);
      }),
      fuzzSettings(60),
    );
  }, 120_000);

  it("given a schema and tool parameters exactly at the limit, then both endpoints serve them", async () => {
    for (const field of jsonFields.filter((candidate) => candidate.freeForm)) {
      const answer = await send(field, "alpha-5.4-mini", nestedJson("schemas", depthMax));
      expect(answer.status, `${field.path} ${field.field}: ${answer.text.slice(0, 200)}`).toBe(200);
    }
  });
});
