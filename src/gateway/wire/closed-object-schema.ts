import { z } from "zod";

/**
 * An object of exactly these fields: any other is refused naming it (C12: a parameter the gateway cannot
 * honour is refused, never dropped). The message completes the sentence `<path>.<field>: …`.
 */
export function closedObjectSchema<Shape extends z.core.$ZodLooseShape>(
  shape: Shape,
  options: { error: string; unknownField: string },
) {
  return z
    .object(shape, { error: options.error })
    .catchall(z.unknown())
    .superRefine((value, context) => {
      for (const key of Object.keys(value)) {
        if (!Object.hasOwn(shape, key))
          context.addIssue({ code: "custom", path: [key], message: options.unknownField });
      }
    });
}

/**
 * A field the gateway cannot honour: absent or null is fine (clients built on the protocol's own schema send
 * explicit nulls), any value is refused with the reason.
 */
export function refusedFieldSchema(reason: string) {
  return z.null({ error: reason }).optional();
}
