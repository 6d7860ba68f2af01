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
 * A field the gateway cannot honour: absent or null is fine (clients built on the protocol's own schema send
 * explicit nulls), any value is refused with the reason.
 */
export function refusedFieldSchema(reason: string) {
  return z.null({ error: reason }).optional();
}
