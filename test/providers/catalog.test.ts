import { describe, expect, it } from "vitest";
import { isDecimalString } from "../../src/kernel/money";
import { findModel, isModelSlug, listModels } from "../../src/providers/catalog";

/** interface.md, "Supported model slugs", in its order. */
const specifiedSlugs = [
  "alpha-5.4-mini",
  "alpha-5.4",
  "alpha-5.4-pro",
  "alpha-5.5",
  "beta-3-flash",
  "beta-3.1-flash-lite",
  "beta-3.1-pro",
  "beta-3.5-flash",
  "gamma-4-3",
  "gamma-4-5",
  "delta-4.5-haiku",
  "delta-4.6-sonnet",
  "delta-4.6-opus",
  "delta-4.7-opus",
  "delta-4.8-opus",
  "delta-5-sonnet",
  "epsilon",
  "epsilon-pro",
  "epsilon-reasoning-pro",
  "epsilon-deep-research",
  "zeta-pro3",
  "zeta-pro2",
  "zeta-mini",
];

describe("model catalog", () => {
  it("lists exactly the 23 slugs of the interface, in its order", () => {
    expect(listModels().map((model) => model.slug)).toEqual(specifiedSlugs);
  });

  it("names each slug's family by its first word", () => {
    for (const model of listModels()) expect(model.slug.split("-")[0]).toBe(model.family);
  });

  it("routes every family to its protocol (C5), alpha-5.4-pro through responses", () => {
    const protocolOf = (slug: string) => findModel(slug)?.protocol;
    expect(protocolOf("alpha-5.4-mini")).toBe("chat-completions");
    expect(protocolOf("alpha-5.4")).toBe("chat-completions");
    expect(protocolOf("alpha-5.5")).toBe("chat-completions");
    expect(protocolOf("alpha-5.4-pro")).toBe("responses");
    const protocolOfFamily: Record<string, string> = {
      beta: "generate-content",
      delta: "messages",
      gamma: "chat-completions",
      epsilon: "chat-completions",
      zeta: "chat-completions",
    };
    for (const model of listModels().filter((entry) => entry.family !== "alpha")) {
      expect(model.protocol, model.slug).toBe(protocolOfFamily[model.family]);
    }
  });

  it("ignores temperature for delta-4.7/4.8-opus and temperature and top_p for alpha-5.4-pro/5.5 only", () => {
    const ignoring = listModels()
      .filter((model) => model.ignoredParameters.length > 0)
      .map((model) => [model.slug, [...model.ignoredParameters]]);
    expect(ignoring).toEqual([
      ["alpha-5.4-pro", ["temperature", "top_p"]],
      ["alpha-5.5", ["temperature", "top_p"]],
      ["delta-4.7-opus", ["temperature"]],
      ["delta-4.8-opus", ["temperature"]],
    ]);
  });

  it("prices every model with positive decimal strings, cached input never above input", () => {
    for (const model of listModels()) {
      const prices = [
        model.inputUsdPerMillionTokens,
        model.outputUsdPerMillionTokens,
        model.cachedInputUsdPerMillionTokens,
      ];
      for (const price of prices) {
        expect(isDecimalString(price), `${model.slug} ${price}`).toBe(true);
        expect(Number(price)).toBeGreaterThan(0);
      }
      expect(Number(model.cachedInputUsdPerMillionTokens)).toBeLessThanOrEqual(
        Number(model.inputUsdPerMillionTokens),
      );
    }
  });

  it("uses the slug as the neutral upstream id and a fixed creation time", () => {
    for (const model of listModels()) {
      expect(model.upstreamModelId).toBe(model.slug);
      expect(Number.isInteger(model.created)).toBe(true);
    }
  });

  it("finds a known slug and nothing for an unknown or differently cased one", () => {
    expect(findModel("delta-4.6-sonnet")?.family).toBe("delta");
    expect(findModel("delta-4.6-Sonnet")).toBeUndefined();
    expect(findModel("alpha-6")).toBeUndefined();
    expect(isModelSlug("zeta-mini")).toBe(true);
    expect(isModelSlug("toString")).toBe(false);
  });
});
