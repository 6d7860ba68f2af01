import type { RequestHandler } from "express";
import { apiErrors } from "../api-error";

/**
 * The finance reads (statements, the finance export, the billing history and its totals, usage by day) take
 * each query parameter once. The query parser hands a repeated one (`?month=2026-01&month=2026-02`) over as a
 * list, which each route's schema then refused with words about the value (`must be a month "YYYY-MM"`,
 * `expected string, received array`) where both values were fine; which one was meant is not ours to guess.
 * Refused here, 400/100, saying what is wrong.
 */
export function refuseRepeatedQueryParameters(): RequestHandler {
  return (request, _response, next) => {
    const repeated = Object.entries(request.query).find(([, value]) => Array.isArray(value));
    if (repeated === undefined) {
      next();
      return;
    }
    const [name, values] = repeated as [string, unknown[]];
    next(apiErrors.validation(`${shownParameterName(name)}: given ${values.length} times; give it once`));
  };
}

/** A parameter's name is the client's text: enough of it to recognise, not a page of it echoed back. */
const parameterNameShownMax = 100;

/** A parameter's name as a refusal names it: at most 100 characters, and `""` for a name left empty (`?=x`). */
export function shownParameterName(name: string): string {
  if (name === "") return '""';
  return name.length > parameterNameShownMax ? `${name.slice(0, parameterNameShownMax)}…` : name;
}
