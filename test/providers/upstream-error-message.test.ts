import { describe, expect, it } from "vitest";
import { upstreamLimits } from "../../src/kernel/limits";
import { statusError } from "../../src/providers/http/transport-errors";
import {
  extractUpstreamErrorMessage,
  sanitiseUpstreamMessage,
} from "../../src/providers/http/upstream-error-message";
import { UpstreamFailedError, UpstreamRejectedError } from "../../src/providers/provider";

describe("upstream error messages", () => {
  it("extracts the message of every protocol's error body", () => {
    const bodies = [
      { error: { message: "chat says no", type: "invalid_request_error", code: null } },
      { type: "error", error: { type: "invalid_request_error", message: "messages says no" } },
      { error: { code: 400, message: "generate says no", status: "INVALID_ARGUMENT" } },
      [{ error: { code: 400, message: "wrapped says no", status: "INVALID_ARGUMENT" } }],
    ];
    expect(bodies.map((body) => extractUpstreamErrorMessage(JSON.stringify(body)))).toEqual([
      "chat says no",
      "messages says no",
      "generate says no",
      "wrapped says no",
    ]);
  });

  it("keeps nothing of a body that is not JSON (a proxy's HTML page)", () => {
    expect(
      extractUpstreamErrorMessage("<html><body>502 Bad Gateway nginx/1.25</body></html>"),
    ).toBeUndefined();
  });

  it("redacts our own key and credential-shaped strings, in any position", () => {
    const ourKey = "upstream-secret-4f9a";
    const message =
      `Incorrect API key provided: sk-proj-abc123********************xyz9. Key ${ourKey} ` +
      "also AIzaSyA1b2C3d4E5f6G7h8 and Bearer eyJhbGciOi and svc_abcdEFGH1234";
    const sanitised = sanitiseUpstreamMessage(message, [ourKey]);
    expect(sanitised).not.toContain(ourKey);
    expect(sanitised).not.toMatch(/sk-proj|AIza|eyJhbGciOi|svc_abcd/);
    expect(sanitised).toContain("Incorrect API key provided: [redacted]");
  });

  it("collapses control characters and whitespace and cuts long text", () => {
    expect(sanitiseUpstreamMessage("line one\n\tline\u0000two  ", [])).toBe("line one line two");
    const long = sanitiseUpstreamMessage("word ".repeat(200), []);
    expect(long.length).toBe(upstreamLimits.messageCharactersMax);
    expect(long.endsWith("…")).toBe(true);
  });

  it("maps 4xx to rejected and 5xx to failed, with the sanitised upstream message", () => {
    const body = JSON.stringify({
      error: { message: "max_tokens: 999999 > 64000, the maximum for this model" },
    });
    const rejected = statusError(400, body, []);
    expect(rejected).toBeInstanceOf(UpstreamRejectedError);
    expect(rejected).toMatchObject({ upstreamStatus: 400 });
    expect(rejected.message).toContain("max_tokens: 999999 > 64000");
    const failed = statusError(503, "<html>busy</html>", []);
    expect(failed).toBeInstanceOf(UpstreamFailedError);
    expect(failed).toMatchObject({ reason: "status", message: "upstream failed (HTTP 503)" });
  });
});
