import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listModels } from "../../../src/providers/catalog";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";

/**
 * interface.md's four replies, read as raw bytes from the running gateway for every model of the catalog, so
 * that each upstream protocol's adapter is held to the same wire: ids, `object`, seconds, usage keys, the
 * chunk envelope, the responses events in their order with their fields, the message item's status at each
 * step, and `data: [DONE]` last. Fields the contract adds (C5: role, sequence_number, the response's status)
 * are allowed; nothing interface.md shows may be missing or shaped otherwise.
 */

const chatUsageKeys = ["prompt_tokens", "completion_tokens", "total_tokens"];
const responseUsageKeys = [
  "input_tokens",
  "input_tokens_details",
  "output_tokens",
  "output_tokens_details",
  "total_tokens",
];

let harness: GatewayHarness;
let apiKey: string;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "wire-shape" });
  const session = await harness.session("alice");
  apiKey = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "alice" }, "100000");
});
afterAll(async () => {
  await harness?.close();
});

async function post(path: string, body: unknown): Promise<{ contentType: string; text: string }> {
  const response = await fetch(`${harness.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return { contentType: response.headers.get("content-type") ?? "", text };
}

/** The `<ms>` of an id `<prefix><ms>`, which `created` / `created_at` must be in seconds. */
function stampOf(id: string, prefix: "chatcmpl-" | "resp-"): number {
  expect(id).toMatch(new RegExp(`^${prefix}\\d{13}$`));
  return Number(id.slice(prefix.length));
}

function expectChatUsage(usage: Record<string, number>): void {
  expect(Object.keys(usage)).toEqual(chatUsageKeys);
  for (const count of Object.values(usage)) expect(Number.isInteger(count)).toBe(true);
  expect(usage.total_tokens).toBe(usage.prompt_tokens! + usage.completion_tokens!);
}

function expectResponseUsage(usage: Record<string, unknown>, zero: boolean): void {
  expect(Object.keys(usage)).toEqual(responseUsageKeys);
  const count = zero ? 0 : expect.any(Number);
  expect(usage).toEqual({
    input_tokens: count,
    input_tokens_details: { cached_tokens: count },
    output_tokens: count,
    output_tokens_details: { reasoning_tokens: count },
    total_tokens: count,
  });
  const counts = [
    usage.input_tokens,
    (usage.input_tokens_details as Record<string, unknown>).cached_tokens,
    usage.output_tokens,
    (usage.output_tokens_details as Record<string, unknown>).reasoning_tokens,
  ];
  for (const value of counts) expect(Number.isInteger(value)).toBe(true);
  expect(usage.total_tokens).toBe((usage.input_tokens as number) + (usage.output_tokens as number));
}

/** A response body as interface.md shows it: one message item, completed (interface.md, States), holding `text`. */
function expectResponseBody(
  body: Record<string, unknown>,
  model: string,
  text: string,
  usage: "zero" | "counted",
): void {
  const id = body.id as string;
  expect(body).toMatchObject({
    object: "response",
    created_at: Math.floor(stampOf(id, "resp-") / 1000),
    model,
    output_text: text,
    output: [
      {
        id: `${id}-msg`,
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text, annotations: [] }],
      },
    ],
  });
  expect(Object.keys((body.output as object[])[0]!)).toEqual(["id", "type", "status", "role", "content"]);
  expectResponseUsage(body.usage as Record<string, unknown>, usage === "zero");
}

/** The frames of an SSE body, each without its blank line; the body must end in `data: [DONE]`. */
function framesOf(text: string): string[] {
  expect(text.endsWith("\n\ndata: [DONE]\n\n")).toBe(true);
  return text.slice(0, -2).split("\n\n");
}

const question = [{ role: "user", content: "Why do rivers bend?" }];

describe.each(listModels().map((model) => model.slug))("given %s", (model) => {
  it("when chat completions answer as JSON, then the body is interface.md's, key for key", async () => {
    const { contentType, text } = await post("/chat/completions", { model, messages: question });
    expect(contentType).toMatch(/^application\/json/);
    const body = JSON.parse(text);
    expect(Object.keys(body)).toEqual(["id", "object", "created", "model", "choices", "usage"]);
    expect(body).toMatchObject({
      object: "chat.completion",
      created: Math.floor(stampOf(body.id, "chatcmpl-") / 1000),
      model,
    });
    expect(body.choices).toEqual([
      { index: 0, message: { role: "assistant", content: expect.any(String) }, finish_reason: "stop" },
    ]);
    expectChatUsage(body.usage);
  });

  it("when chat completions stream without asking for usage, then text chunks, a last chunk with usage, then [DONE]", async () => {
    const { contentType, text } = await post("/chat/completions", {
      model,
      messages: question,
      stream: true,
      stream_options: { include_usage: false },
    });
    expect(contentType).toMatch(/^text\/event-stream/);
    const frames = framesOf(text);
    for (const frame of frames) expect(frame).toMatch(/^data: [^\n]*$/);
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame.slice("data: ".length)));
    const id = chunks[0].id as string;
    const envelope = {
      id,
      object: "chat.completion.chunk",
      created: Math.floor(stampOf(id, "chatcmpl-") / 1000),
      model,
    };
    const last = chunks.pop();
    expect(chunks.length).toBeGreaterThan(0);
    for (const [index, chunk] of chunks.entries()) {
      expect(chunk).toEqual({
        ...envelope,
        choices: [
          {
            index: 0,
            delta:
              index === 0
                ? { role: "assistant", content: expect.any(String) }
                : { content: expect.any(String) },
            finish_reason: null,
          },
        ],
      });
    }
    expect(chunks.map((chunk) => chunk.choices[0].delta.content).join("")).not.toBe("");
    expect(last).toEqual({
      ...envelope,
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
      usage: expect.any(Object),
    });
    expectChatUsage(last.usage);
  });

  it("when responses answer as JSON, then the body is interface.md's with its item completed", async () => {
    const { contentType, text } = await post("/responses", {
      model,
      instructions: "Answer in one sentence.",
      input: question,
    });
    expect(contentType).toMatch(/^application\/json/);
    const body = JSON.parse(text);
    expectResponseBody(body, model, body.output_text, "counted");
    expect(body.output_text).not.toBe("");
  });

  it("when responses stream, then the ten steps of interface.md in order, each with its fields, and the item completed only when done", async () => {
    const { contentType, text } = await post("/responses", {
      model,
      input: "Why do rivers bend?",
      stream: true,
    });
    expect(contentType).toMatch(/^text\/event-stream/);
    const frames = framesOf(text);
    const events = frames.slice(0, -1).map((frame) => {
      const [eventLine, dataLine, ...rest] = frame.split("\n");
      expect(rest).toEqual([]);
      const data = JSON.parse(dataLine!.replace(/^data: /, ""));
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
    const steps = events.map((event) => event.type as string);
    const deltas = steps.filter((step) => step === "response.output_text.delta").length;
    expect(deltas).toBeGreaterThan(0);
    expect(steps).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...Array<string>(deltas).fill("response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);

    const [created, inProgress, itemAdded, partAdded] = events;
    const [textDone, partDone, itemDone, completed] = events.slice(-4);
    const responseId = created.response.id as string;
    const itemId = `${responseId}-msg`;
    const part = { response_id: responseId, item_id: itemId, output_index: 0, content_index: 0 };
    const fullText = events
      .filter((event) => event.type === "response.output_text.delta")
      .map((event) => {
        expect(event).toMatchObject({ ...part, delta: expect.any(String) });
        return event.delta as string;
      })
      .join("");

    expectResponseBody(created.response, model, "", "zero");
    expect(inProgress).toMatchObject({ response_id: responseId });
    expect(itemAdded).toMatchObject({
      response_id: responseId,
      output_index: 0,
      item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] },
    });
    expect(partAdded).toMatchObject({ ...part, part: { type: "output_text", text: "", annotations: [] } });
    expect(textDone).toMatchObject({ ...part, text: fullText });
    expect(partDone).toMatchObject({
      ...part,
      part: { type: "output_text", text: fullText, annotations: [] },
    });
    expect(itemDone).toMatchObject({
      response_id: responseId,
      output_index: 0,
      item: {
        id: itemId,
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: fullText, annotations: [] }],
      },
    });
    expect(completed.response.id).toBe(responseId);
    expectResponseBody(completed.response, model, fullText, "counted");
  });
});
