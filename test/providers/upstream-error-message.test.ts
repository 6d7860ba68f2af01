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

  it("cuts a stack trace and all after it, in each language upstream servers are written in (C3)", () => {
    const traces = [
      'model crashed\nTraceback (most recent call last):\n  File "/srv/app/server.py", line 88, in handle\n    raise RuntimeError("db down")',
      'model crashed\n  File "/srv/app/server.py", line 88, in handle',
      "model crashed\n    at handle (/srv/app/server.js:88:13)\n    at process.processTicksAndRejections",
      "model crashed\n\tat com.example.Server.handle(Server.java:88)",
      "model crashed\ngoroutine 1 [running]:\nmain.handle()",
    ];
    expect(traces.map((trace) => sanitiseUpstreamMessage(trace, []))).toEqual(Array(5).fill("model crashed"));
    expect(sanitiseUpstreamMessage("the schema says: at most 4 items (see docs:12:3)", [])).toBe(
      "the schema says: at most 4 items (see docs:12:3)",
    );
  });

  it("maps 4xx to rejected, with the sanitised upstream message, and 5xx to failed, with its status alone", () => {
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
    const crashed = statusError(
      500,
      JSON.stringify({
        error: { message: 'RuntimeError: db down at /srv/app/db.py\nFile "/srv/app/db.py", line 9' },
      }),
      [],
    );
    expect(crashed.message).toBe("upstream failed (HTTP 500)");
    const traceOnly = statusError(
      400,
      JSON.stringify({ error: { message: "Traceback (most recent call last):" } }),
      [],
    );
    expect(traceOnly.message).toBe("upstream rejected the request (HTTP 400)");
  });
});
