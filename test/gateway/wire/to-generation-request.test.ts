import { describe, expect, it } from "vitest";
import {
  chatCompletionsParameterNames,
  parseChatCompletionsRequest,
} from "../../../src/gateway/wire/chat-completions-request";
import { parseResponsesRequest, responsesParameterNames } from "../../../src/gateway/wire/responses-request";
import { toGenerationRequest } from "../../../src/gateway/wire/to-generation-request";
import { type CatalogModel, findModel } from "../../../src/providers/catalog";
import { protocolParameters } from "../../../src/providers/protocol-parameters";
import { expectValidationError } from "./support/rejection";

function model(slug: string): CatalogModel {
  const found = findModel(slug);
  if (!found) throw new Error(`no catalog model ${slug}`);
  return found;
}

const messages = [{ role: "user", content: "Why do rivers bend?" }];
const everyParameter = { temperature: 0.3, top_p: 0.8, max_tokens: 50 };

describe("toGenerationRequest", () => {
  it.each<[string, { temperature?: number; topP?: number }]>([
    ["alpha-5.4", { temperature: 0.3, topP: 0.8 }],
    ["delta-4.6-opus", { temperature: 0.3, topP: 0.8 }],
    ["alpha-5.4-pro", {}],
    ["alpha-5.5", {}],
    ["delta-4.7-opus", { topP: 0.8 }],
    ["delta-4.8-opus", { topP: 0.8 }],
  ])("for %s sends only the sampling parameters the model does not ignore", (slug, sampling) => {
    const parsed = parseChatCompletionsRequest({ model: slug, messages, ...everyParameter });
    expect(toGenerationRequest(parsed, model(slug), chatCompletionsParameterNames)).toStrictEqual({
      upstreamModelId: slug,
      messages: [{ role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] }],
      ...sampling,
      maxOutputTokens: 50,
    });
  });

  it.each(["alpha-5.4-pro", "alpha-5.5", "delta-4.7-opus"])(
    "validates an ignored parameter before dropping it (%s)",
    (slug) => {
      expectValidationError(
        () => parseChatCompletionsRequest({ model: slug, messages, temperature: 3 }),
        "temperature: must be a number from 0 to 2 inclusive",
      );
      expectValidationError(
        () => parseResponsesRequest({ model: slug, input: "Hi", top_p: 2 }),
        "top_p: must be a number from 0 to 1 inclusive",
      );
    },
  );

  it("sends no default the client did not ask for", () => {
    const fromChat = toGenerationRequest(
      parseChatCompletionsRequest({ model: "gamma-4-5", messages }),
      model("gamma-4-5"),
      chatCompletionsParameterNames,
    );
    const fromResponses = toGenerationRequest(
      parseResponsesRequest({ model: "gamma-4-5", input: "Why do rivers bend?" }),
      model("gamma-4-5"),
      chatCompletionsParameterNames,
    );
    const expected = {
      upstreamModelId: "gamma-4-5",
      messages: [{ role: "user", content: [{ type: "text", text: "Why do rivers bend?" }] }],
    };
    expect(fromChat).toStrictEqual(expected);
    expect(fromResponses).toStrictEqual(expected);
  });

  it("sends a value equal to the default when the client gave it", () => {
    const parsed = parseChatCompletionsRequest({ model: "gamma-4-5", messages, temperature: 1, top_p: 1 });
    expect(toGenerationRequest(parsed, model("gamma-4-5"), chatCompletionsParameterNames)).toMatchObject({
      temperature: 1,
      topP: 1,
    });
  });

  it("maps the responses output limit and instructions", () => {
    const parsed = parseResponsesRequest({
      model: "alpha-5.4-pro",
      instructions: "Be brief.",
      input: "Why?",
      max_output_tokens: 16,
    });
    expect(toGenerationRequest(parsed, model("alpha-5.4-pro"), chatCompletionsParameterNames)).toStrictEqual({
      upstreamModelId: "alpha-5.4-pro",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Why?" }] },
      ],
      maxOutputTokens: 16,
    });
  });

  it("refuses a catalog model that is not the one requested (a programmer error)", () => {
    const parsed = parseChatCompletionsRequest({ model: "alpha-5.4", messages });
    expect(() => toGenerationRequest(parsed, model("alpha-5.5"), chatCompletionsParameterNames)).toThrow(
      /alpha-5.4 paired with catalog model alpha-5.5/,
    );
  });
});

describe("toGenerationRequest: parameters a protocol cannot carry (C12)", () => {
  it("carries participant names to a chat-completions model and refuses them for the other protocols", () => {
    const named = (slug: string) =>
      parseChatCompletionsRequest({ model: slug, messages: [{ role: "user", content: "Hi", name: "ana" }] });
    expect(
      toGenerationRequest(named("alpha-5.4"), model("alpha-5.4"), chatCompletionsParameterNames).messages,
    ).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }], name: "ana" }]);
    for (const slug of ["alpha-5.4-pro", "delta-4.5-haiku", "beta-3-flash"])
      expectValidationError(
        () => toGenerationRequest(named(slug), model(slug), chatCompletionsParameterNames),
        `messages: name: not supported by ${slug}`,
      );
  });

  it("carries an image's low or high detail to the chat-completions and responses protocols, takes auto everywhere, and refuses low or high for the others naming the client's field", () => {
    const url = "https://example.com/a.png";
    const chat = (slug: string, detail: "auto" | "low" | "high") =>
      toGenerationRequest(
        parseChatCompletionsRequest({
          model: slug,
          messages: [{ role: "user", content: [{ type: "image_url", image_url: { url, detail } }] }],
        }),
        model(slug),
        chatCompletionsParameterNames,
      );
    const responses = (slug: string, detail: "auto" | "low" | "high") =>
      toGenerationRequest(
        parseResponsesRequest({
          model: slug,
          input: [{ role: "user", content: [{ type: "input_image", image_url: url, detail }] }],
        }),
        model(slug),
        responsesParameterNames,
      );
    for (const slug of ["alpha-5.4", "gamma-4-5", "alpha-5.4-pro"]) {
      expect(chat(slug, "high").messages[0]).toMatchObject({ content: [{ detail: "high" }] });
      expect(responses(slug, "low").messages[0]).toMatchObject({ content: [{ detail: "low" }] });
    }
    for (const slug of ["delta-4.6-sonnet", "beta-3-flash"]) {
      expect(chat(slug, "auto").messages).toHaveLength(1);
      expect(responses(slug, "auto").messages).toHaveLength(1);
      expectValidationError(
        () => chat(slug, "low"),
        `messages: image_url.detail: "low" is not supported by ${slug}, which takes images at its own resolution; send "auto" or leave it out`,
      );
      expectValidationError(
        () => responses(slug, "high"),
        `input: input_image.detail: "high" is not supported by ${slug}, which takes images at its own resolution; send "auto" or leave it out`,
      );
    }
  });

  it("refuses metadata for a generateContent model (the protocol has no such field), naming the client's field", () => {
    const parsed = parseChatCompletionsRequest({
      model: "beta-3-flash",
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(protocolParameters["generate-content"].has("metadata")).toBe(false);
    expectValidationError(
      () =>
        toGenerationRequest(
          { ...parsed, metadata: { team: "a" } },
          model("beta-3-flash"),
          chatCompletionsParameterNames,
        ),
      "metadata: not supported by beta-3-flash",
    );
  });

  it("refuses a temperature above 1 for a messages model (its upstream samples in 0 to 1), carries 1, and carries 2 elsewhere", () => {
    const at = (slug: string, temperature: number) =>
      toGenerationRequest(
        parseChatCompletionsRequest({ model: slug, messages, temperature }),
        model(slug),
        chatCompletionsParameterNames,
      );
    expectValidationError(
      () => at("delta-4.6-opus", 1.5),
      "temperature: must be from 0 to 1 inclusive for delta-4.6-opus",
    );
    expect(at("delta-4.6-opus", 1).temperature).toBe(1);
    for (const slug of ["alpha-5.4", "beta-3-flash", "gamma-4-5"]) expect(at(slug, 2).temperature).toBe(2);
    // A model that ignores temperature takes the formats' whole range, as before.
    expect(at("delta-4.7-opus", 1.5).temperature).toBeUndefined();
  });
});
