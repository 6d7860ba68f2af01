import { z } from "zod";
import { nestsDeeperThan } from "../../kernel/json-nesting";
import { limits } from "../../kernel/limits";

/**
 * The request fields whose JSON the gateway does not define but passes on (a JSON schema, a tool's
 * parameters). Their nesting is bounded here, at validation, so that nothing after — the upstream request's
 * serialisation, a protocol's conversion — walks a value deeper than the stack goes.
 */

const depthMax = limits.requestJsonNestingDepthMax;

export const nestingDepthMessage = `must be nested at most ${depthMax} levels deep (objects and arrays)`;

/** A JSON object of any fields, nested at most `requestJsonNestingDepthMax` levels, the object included. */
export function freeFormJsonObjectSchema(options: { error: string }) {
  return z
    .record(z.string(), z.unknown(), { error: options.error })
    .refine((value) => !nestsDeeperThan(value, depthMax), { error: nestingDepthMessage });
}
