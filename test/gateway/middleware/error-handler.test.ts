import { describe, expect, it } from "vitest";
import { toApiError } from "../../../src/gateway/middleware/error-handler";
import { UnsupportedRequestError, UpstreamRejectedError } from "../../../src/providers/provider";

describe("toApiError: what an adapter refuses before any upstream call", () => {
  it("given a value the model's protocol cannot carry, then 400/100 with the message naming the field", () => {
    const error = toApiError(
      new UnsupportedRequestError('reasoning effort "xhigh": not supported by this model'),
    );
    expect({ status: error.httpStatus, code: error.applicationCode, message: error.message }).toEqual({
      status: 400,
      code: 100,
      message: 'reasoning effort "xhigh": not supported by this model',
    });
  });

  it("given an upstream's own refusal, then still 400/300: the two stay apart", () => {
    const error = toApiError(new UpstreamRejectedError(400, "Request contains an invalid argument."));
    expect({ status: error.httpStatus, code: error.applicationCode }).toEqual({ status: 400, code: 300 });
  });
});
