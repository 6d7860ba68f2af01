import { expect } from "vitest";
import { ApiError } from "../../../../src/gateway/api-error";

/** The ApiError `action` throws; fails the test if it throws anything else or nothing. */
export function rejectionOf(action: () => unknown): ApiError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected the request to be rejected");
}

/** A validation failure as the edge will show it: HTTP 400, application code 100, this message. */
export function expectValidationError(action: () => unknown, message: string): void {
  const error = rejectionOf(action);
  expect({
    httpStatus: error.httpStatus,
    applicationCode: error.applicationCode,
    message: error.message,
  }).toEqual({
    httpStatus: 400,
    applicationCode: 100,
    message,
  });
}
