import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { BoundedCache } from "../../src/providers/simulator/bounded-cache";
import {
  simulateCompletion,
  simulatedWordsMax,
  simulatedWordsMin,
} from "../../src/providers/simulator/simulated-completion";

const prompt = (text: string) => [{ role: "user", text }];

describe("simulated completion", () => {
  it("given the same prompt twice, then the answer is identical; given another prompt, it differs", () => {
    const first = simulateCompletion(prompt("What is a harbor?"), undefined);
    expect(simulateCompletion(prompt("What is a harbor?"), undefined).text).toBe(first.text);
    expect(simulateCompletion(prompt("What is a meadow?"), undefined).text).not.toBe(first.text);
  });

  it("reports real token counts: the tokenizer's count of the output and of every message plus template", () => {
    for (let index = 0; index < 200; index += 1) {
      const messages = [
        { role: "system", text: "You are terse." },
        { role: "user", text: `Question number ${index}: tell me about rivers.` },
      ];
      const completion = simulateCompletion(messages, undefined);
      expect(completion.outputTokens, completion.text).toBe(countTokens(completion.text));
      expect(completion.pieceTokens.reduce((total, tokens) => total + tokens, 0)).toBe(
        completion.outputTokens,
      );
      expect(completion.promptTokens).toBe(
        3 + (3 + countTokens("You are terse.")) + (3 + countTokens(messages[1]!.text)),
      );
      const words = completion.text.split(" ").length;
      expect(words).toBeGreaterThanOrEqual(simulatedWordsMin);
      expect(words).toBeLessThanOrEqual(simulatedWordsMax);
      expect(completion.finish).toBe("stop");
    }
  });

  it("given a max token limit below the drawn length, then the answer stops within it with finish length", () => {
    for (const maxOutputTokens of [1, 5, 9]) {
      const completion = simulateCompletion(prompt("Tell me a long story."), maxOutputTokens);
      expect(completion.outputTokens).toBeLessThanOrEqual(maxOutputTokens);
      expect(completion.outputTokens).toBe(countTokens(completion.text));
      expect(completion.finish).toBe("length");
    }
  });

  it("keeps a bounded cache that forgets the least recently used entry", () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set("a", 1);
    cache.set("b", 2);
    cache.get("a");
    cache.set("c", 3);
    expect([cache.get("a"), cache.get("b"), cache.get("c"), cache.size]).toEqual([1, undefined, 3, 2]);
  });
});
