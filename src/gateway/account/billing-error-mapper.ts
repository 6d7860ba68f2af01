import type { ErrorRequestHandler } from "express";
import { NoDiscountRuleError } from "../../billing/commands/set-discount";
import { UnknownModelError } from "../../billing/commands/unknown-model-error";
import { KoreaeximError } from "../../billing/fx/koreaexim-errors";
import { BillingHistoryTooLargeError } from "../../billing/read-models/billing-history";
import {
  InvalidBillingCursorError,
  TooManyBillingGroupsError,
} from "../../billing/read-models/billing-pages";
import { StatementTooLargeError } from "../../billing/statements/monthly-statement";
import { ApiError, apiErrors, applicationCodes } from "../api-error";

/**
 * Billing's operational errors, mapped once to C3 codes; anything else goes on to the app's error handler
 * (ProjectionLagError and a database down become 503/300 there, the rest 500 without details).
 */
export function billingApiErrorOf(error: unknown): unknown {
  if (error instanceof UnknownModelError || error instanceof NoDiscountRuleError) {
    return apiErrors.notFound(error.message);
  }
  if (error instanceof BillingHistoryTooLargeError) return apiErrors.validation(error.message);
  if (error instanceof InvalidBillingCursorError || error instanceof TooManyBillingGroupsError)
    return apiErrors.validation(error.message);
  if (error instanceof StatementTooLargeError) return apiErrors.validation(error.message);
  // The bank's errors carry only dates, codes and statuses (koreaexim-errors.ts): safe to show the admin.
  if (error instanceof KoreaeximError) {
    return new ApiError(503, applicationCodes.modelProcessing, `FX refresh failed: ${error.message}`);
  }
  return error;
}

export const billingErrorMapper: ErrorRequestHandler = (error, _request, _response, next) => {
  next(billingApiErrorOf(error));
};
