import { describe, expect, it } from "vitest";
import { ToolCallDeltaConversion } from "../../src/providers/chat-completions/convert-chat-completions-tool-call-deltas";
import { type GenerationStreamPart, UpstreamFailedError } from "../../src/providers/provider";

describe("chat-completions tool-call deltas", () => {
  it("given a call sent whole in one delta, then it starts and carries its arguments at once", () => {
    const parts: GenerationStreamPart[] = [];
    new ToolCallDeltaConversion().convert(
      [{ index: 0, id: "call_1", function: { name: "get_time", arguments: '{"city":"Seoul"}' } }],
      parts,
    );
    expect(parts).toEqual([
      { type: "tool-call-start", index: 0, id: "call_1", name: "get_time" },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"city":"Seoul"}' },
    ]);
  });

  it("given an upstream that numbers its calls from elsewhere, then the parts number them from 0 in order", () => {
    const conversion = new ToolCallDeltaConversion();
    const parts: GenerationStreamPart[] = [];
    conversion.convert([{ index: 3, id: "call_a", function: { name: "a", arguments: "" } }], parts);
    conversion.convert([{ index: 5, id: "call_b", function: { name: "b", arguments: "{" } }], parts);
    conversion.convert(
      [
        { index: 3, function: { arguments: "{}" } },
        { index: 5, function: { arguments: "}" } },
      ],
      parts,
    );
    expect(parts).toEqual([
      { type: "tool-call-start", index: 0, id: "call_a", name: "a" },
      { type: "tool-call-start", index: 1, id: "call_b", name: "b" },
      { type: "tool-call-delta", index: 1, argumentsDelta: "{" },
      { type: "tool-call-delta", index: 0, argumentsDelta: "{}" },
      { type: "tool-call-delta", index: 1, argumentsDelta: "}" },
    ]);
  });

  it.each([
    ["arguments for a call that never started", { index: 0, function: { arguments: "{}" } }],
    ["a first delta without an id", { index: 0, function: { name: "a", arguments: "" } }],
    ["a first delta without a name", { index: 0, id: "call_1", function: { arguments: "" } }],
  ])("given %s, then the reply is malformed", (_case, delta) => {
    expect(() => new ToolCallDeltaConversion().convert([delta], [])).toThrow(UpstreamFailedError);
  });
});
