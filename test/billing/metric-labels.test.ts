import { describe, expect, it } from "vitest";
import {
  endpointLabelOf,
  errorTypeLabelOf,
  keyKindLabelOf,
  modelLabelOf,
  operationNameLabelOf,
  providerLabelOf,
  statusLabelOf,
} from "../../src/billing/metric-labels";
import { keyPreviewOf } from "../../src/gateway/observation/request-observation";

/** Label values come from closed sets whatever the request carries: ids and free text never become labels. */

describe("metric labels", () => {
  it.each([
    ["/llm/v1/chat/completions", "chat.completions"],
    ["/llm/v1/chat/completions/?stream=1", "chat.completions"],
    ["/llm/v1/responses", "responses"],
    ["/llm/v1/models", "models"],
    ["/llm/v1/models/some-user-chosen-text", "models"],
    ["/llm/v1/anything-else", "other"],
    ["/llm/apis/3f1c0a52-0000-4000-8000-000000000000/status", "account"],
    ["/llm/billing?from=2026-01-01", "account"],
    ["/admin/accounts/user/alice", "admin"],
    ["/health/ready", "operations"],
    ["/metrics", "operations"],
    ["/docs", "operations"],
    ["/openapi.json", "operations"],
    ["/user-supplied/path/123", "other"],
  ])("endpoint of %s is %s", (url, label) => {
    expect(endpointLabelOf(url)).toBe(label);
  });

  it("reports known statuses as themselves, others by class, and a client that left as disconnected", () => {
    expect(
      [200, 201, 400, 401, 403, 404, 429, 500, 503].map((status) => statusLabelOf(status, true)),
    ).toEqual(["200", "201", "400", "401", "403", "404", "429", "500", "503"]);
    expect(statusLabelOf(418, true)).toBe("4xx");
    expect(statusLabelOf(302, true)).toBe("3xx");
    expect(statusLabelOf(999, true)).toBe("5xx");
    expect(statusLabelOf(200, false)).toBe("disconnected");
  });

  it("folds models the gateway does not serve into one value", () => {
    const served = (slug: string) => slug === "alpha-5.4";
    expect(modelLabelOf("alpha-5.4", served)).toBe("alpha-5.4");
    expect(modelLabelOf("req_0123456789", served)).toBe("unknown");
    expect(modelLabelOf(undefined, served)).toBe("none");
  });

  it("names key kinds, not keys", () => {
    expect([keyKindLabelOf("user"), keyKindLabelOf("organization"), keyKindLabelOf(undefined)]).toEqual([
      "personal",
      "organization",
      "none",
    ]);
  });

  it("previews API keys only, never sessions or other tokens", () => {
    expect(keyPreviewOf("Bearer svc_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg")).toBe("svc_AbCd…defg");
    expect(keyPreviewOf("Bearer eyJhbGciOiJIUzI1NiJ9.e30.x")).toBeUndefined();
    expect(keyPreviewOf("svc_AbCdEfGhIjKl")).toBeUndefined();
    expect(keyPreviewOf(undefined)).toBeUndefined();
  });
});

describe("OpenTelemetry GenAI labels", () => {
  it("names the operation chat on both generation endpoints and none elsewhere", () => {
    expect(operationNameLabelOf("chat.completions")).toBe("chat");
    expect(operationNameLabelOf("responses")).toBe("chat");
    expect(operationNameLabelOf("models")).toBe("none");
  });

  it("names the provider by the family of the model that answered, else of the one requested, else unknown or none", () => {
    const families: Record<string, string> = { "alpha-5.4": "alpha", "gamma-4-3": "gamma" };
    const familyOf = (slug: string) => families[slug];
    expect(providerLabelOf({ requested: "alpha-5.4", answering: "alpha-5.4" }, familyOf)).toBe("alpha");
    expect(providerLabelOf({ requested: "alpha-5.4", answering: "gamma-4-3" }, familyOf)).toBe("gamma");
    expect(providerLabelOf({ requested: "alpha-5.4", answering: undefined }, familyOf)).toBe("alpha");
    expect(providerLabelOf({ requested: "whatever-a-client-sent", answering: undefined }, familyOf)).toBe(
      "unknown",
    );
    expect(providerLabelOf({ requested: undefined, answering: undefined }, familyOf)).toBe("none");
  });

  it("keeps error types to the error body's few, empty for no error", () => {
    expect(errorTypeLabelOf(null)).toBe("");
    expect(errorTypeLabelOf("rate_limit_error")).toBe("rate_limit_error");
    // A model the key may not call (403/150).
    expect(errorTypeLabelOf("permission_error")).toBe("permission_error");
    expect(errorTypeLabelOf("something a future code adds")).toBe("other");
  });
});
