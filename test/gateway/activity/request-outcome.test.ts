import { describe, expect, it } from "vitest";
import { requestOutcomeOf } from "../../../src/gateway/activity/request-log-entry";
import { apiErrors } from "../../../src/gateway/api-error";

/**
 * How the activity log tells a request's outcome from what the edge saw: served in full, refused, failed by
 * the upstream, or cut — by its client, or by the gateway itself (a stream's status is 200 however it ends).
 */
describe("a request's outcome in the activity log", () => {
  it.each([
    ["answered in full", { finished: true, generationOutcome: "completed" }, "served", null],
    [
      "left by its client",
      { finished: false, generationOutcome: "client-disconnected" },
      "cut",
      "client_disconnected",
    ],
    [
      "failed by its upstream",
      { finished: true, generationOutcome: "upstream-failed" },
      "failed",
      "model_processing_error",
    ],
    [
      "refused before any upstream call",
      { finished: true, error: apiErrors.validation("model: required") },
      "refused",
      "invalid_request_error",
    ],
    [
      "cut at shutdown",
      { finished: true, generationOutcome: "shutdown", error: apiErrors.gatewayStopping() },
      "cut",
      "model_processing_error",
    ],
    [
      "cut at the stream deadline",
      {
        finished: true,
        generationOutcome: "deadline-exceeded",
        error: apiErrors.streamDeadlineExceeded(60_000),
      },
      "cut",
      "model_processing_error",
    ],
    [
      "cut when its hold was released",
      { finished: true, generationOutcome: "interrupted", error: apiErrors.holdReleased() },
      "cut",
      "model_processing_error",
    ],
  ] as const)("given a request %s, then it is %s", (_case, end, outcome, errorType) => {
    expect(requestOutcomeOf({ generationOutcome: undefined, error: undefined, ...end })).toEqual({
      outcome,
      errorType,
    });
  });
});
