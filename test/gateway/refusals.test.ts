import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { recordedUsageOf } from "../support/recorded-usage";

/**
 * A model that declines says so in its own field, and the client reads it there (C12: nothing dropped):
 * through the real gateway, with the official `openai` client, from an upstream of each protocol that says a
 * refusal apart (chat-completions `refusal`, a responses `refusal` part), in both client formats, JSON and
 * streamed. The refusal's words are output, and billed as output.
 */

let harness: GatewayHarness;
let key: string;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "refusals" });
  const session = await harness.session("declined");
  key = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "declined" }, "1000");
}, 60_000);
beforeEach(() => harness.simulator.setFault({ kind: "refuse" }));
afterAll(async () => {
  harness?.simulator.setFault(undefined);
  await harness?.close();
});

const question = [{ role: "user" as const, content: "Tell me how rivers bend" }];

describe.each([
  ["alpha-5.4-mini", "chat-completions"],
  ["alpha-5.4-pro", "responses"],
])("a refusal from %s (a %s upstream)", (model) => {
  it("given chat completions as JSON, then message.refusal holds the words and content is null", async () => {
    const completion = await harness
      .openai(key)
      .chat.completions.create({ model, messages: question })
      .withResponse();
    const message = completion.data.choices[0]!.message;
    expect(message.content).toBeNull();
    expect(message.refusal).toEqual(expect.stringMatching(/\S/));
    expect(completion.data.choices[0]!.finish_reason).toBe("stop");
    // Billed as output: the upstream counted the refusal's tokens, and the ledger has them.
    const usage = await recordedUsageOf(harness, completion.response.headers.get("x-request-id")!);
    expect(usage?.tokens.output).toBe(completion.data.usage!.completion_tokens);
    expect(usage?.tokens.output).toBeGreaterThan(0);
  });

  it("given chat completions streamed, then the client assembles the same refusal", async () => {
    const expected = (await harness.openai(key).chat.completions.create({ model, messages: question }))
      .choices[0]!.message.refusal;
    const stream = harness.openai(key).chat.completions.stream({ model, messages: question });
    const refusalDeltas: string[] = [];
    stream.on("refusal.delta", ({ delta }) => refusalDeltas.push(delta));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.refusal).toBe(expected);
    expect(final.choices[0]!.message.content).toBeNull();
    expect(refusalDeltas.join("")).toBe(expected);
  });

  it("given responses as JSON, then the message holds one refusal part and output_text is empty", async () => {
    const response = await harness.openai(key).responses.create({ model, input: "Tell me how rivers bend" });
    expect(response.status).toBe("completed");
    expect(response.output).toHaveLength(1);
    const [message] = response.output;
    expect(message).toMatchObject({ type: "message", content: [{ type: "refusal" }] });
    expect(response.output_text).toBe("");
  });

  it("given responses streamed, then the refusal events build the same part the JSON reply holds", async () => {
    const json = await harness.openai(key).responses.create({ model, input: "Tell me how rivers bend" });
    const expected = json.output[0]!.type === "message" ? json.output[0]!.content : [];
    const stream = harness.openai(key).responses.stream({ model, input: "Tell me how rivers bend" });
    const types: string[] = [];
    let refused = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.refusal.delta") refused += event.delta;
      if (event.type === "response.refusal.done") expect(event.refusal).toBe(refused);
    }
    const final = await stream.finalResponse();
    expect(final.output).toHaveLength(1);
    expect(final.output[0]).toMatchObject({ type: "message", content: expected });
    expect(types).toEqual(
      expect.arrayContaining([
        "response.content_part.added",
        "response.refusal.delta",
        "response.refusal.done",
        "response.content_part.done",
        "response.completed",
      ]),
    );
    expect(types).not.toContain("response.output_text.delta");
  });

  it("given the chat refusal sent back as history, when the conversation goes on, then it is served and the upstream reads the words as the assistant's turn", async () => {
    const declined = (await harness.openai(key).chat.completions.create({ model, messages: question }))
      .choices[0]!.message;
    harness.simulator.setFault(undefined);

    const next = await harness.openai(key).chat.completions.create({
      model,
      messages: [...question, declined, { role: "user", content: "Why not?" }],
    });

    expect(next.choices[0]!.message.content).toEqual(expect.stringMatching(/\S/));
    expect(JSON.stringify(harness.simulator.lastRequest()!.body)).toContain(JSON.stringify(declined.refusal));
  });

  it("given the responses refusal sent back as input, when the conversation goes on, then it is served and the upstream reads the words as the assistant's turn", async () => {
    const [declined] = (await harness.openai(key).responses.create({ model, input: question })).output;
    if (declined?.type !== "message" || declined.content[0]?.type !== "refusal")
      throw new Error(`expected a refusal, got ${JSON.stringify(declined)}`);
    const words = declined.content[0].refusal;
    harness.simulator.setFault(undefined);

    const next = await harness.openai(key).responses.create({
      model,
      input: [...question, declined, { role: "user", content: "Why not?" }],
    });

    expect(next.output_text).toEqual(expect.stringMatching(/\S/));
    expect(JSON.stringify(harness.simulator.lastRequest()!.body)).toContain(JSON.stringify(words));
  });
});
