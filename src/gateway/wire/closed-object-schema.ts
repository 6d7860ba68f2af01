import { z } from "zod";

/**
 * An object of exactly these fields: any other is refused naming it (C12: a parameter the gateway cannot
 * honour is refused, never dropped). The message completes the sentence `<path>.<field>: …`.
 *
 * zod's own strict check, because it reads the keys of the input: a `__proto__` key (an own field once
 * JSON.parse has read it) is left out of every parsed output, so a check of the output never sees it.
 * `validationErrorOf` names the field.
 */
export function closedObjectSchema<Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  options: { error: string; unknownField: string },
) {
  return z.strictObject(shape, {
    error: (issue) => (issue.code === "unrecognized_keys" ? options.unknownField : options.error),
  });
}

/**
 * A closed object of a generation request (a tool choice, an output format, stream options): a field it does
 * not have `is not a field the gateway serves`.
 */
export function servedObjectSchema<Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  error = "must be an object",
) {
  return closedObjectSchema(shape, { error, unknownField: "is not a field the gateway serves" });
}

/**
 * A request body, closed as every body is, so that a misspelt field (`referense` on a top-up) is refused
 * rather than read as left out: `referense: is not a field of this request (amountWon, reference)`. The
 * fields listed are the shape's own, so the message shows the right spelling and cannot fall behind.
 */
export function closedBodySchema<Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  options: { unknownField?: string } = {},
) {
  return closedObjectSchema(shape, {
    error: "The request body must be a JSON object",
    unknownField: options.unknownField ?? `is not a field of this request (${Object.keys(shape).join(", ")})`,
  });
}

/**
 * A query parameter's value as the query parser hands it over: a text. A repeated parameter
 * (`?month=2026-01&month=2026-02`) comes as a list of texts, which each route's schema would refuse with
 * words about the value (`expected string, received array`) where each value was fine; which one was meant is
 * not ours to guess, so it is refused saying what is wrong.
 */
const queryValueSchema = z
  .string({
    error: (issue) =>
      Array.isArray(issue.input) ? `given ${issue.input.length} times; give it once` : undefined,
  })
  .optional();

/**
 * A query string of exactly these parameters, each given once, closed as a body is, so that a misspelt one
 * (`isOrganisation` on the billing history) is refused rather than read as left out:
 * `isOrganisation: is not a parameter of this request (isOrganization, from, to, …)`, or `(it takes none)`.
 * Only the names and their count are checked here; the route's own schema reads the values.
 */
export function closedQuerySchema(parameterNames: readonly string[]) {
  const listed = parameterNames.length > 0 ? parameterNames.join(", ") : "it takes none";
  return closedObjectSchema(Object.fromEntries(parameterNames.map((name) => [name, queryValueSchema])), {
    error: "The query must be name=value parameters",
    unknownField: `is not a parameter of this request (${listed})`,
  });
}

/**
 * A field the gateway cannot honour: absent or null is fine (clients built on the protocol's own schema send
 * explicit nulls), any value is refused with the reason.
 */
export function refusedFieldSchema(reason: string) {
  return z.null({ error: reason }).optional();
}
