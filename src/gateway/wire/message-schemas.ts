import { z } from "zod";
import type { GenerationMessage } from "../../providers/provider";

/** The message pieces both client formats share: roles and text content. */

/** `developer` is the name the protocol's newer clients give the system role; every upstream knows `system`. */
const roleOfClientRole = {
  system: "system",
  developer: "system",
  user: "user",
  assistant: "assistant",
} as const satisfies Record<string, GenerationMessage["role"]>;
type ClientRole = keyof typeof roleOfClientRole;
const clientRoles = Object.keys(roleOfClientRole) as [ClientRole, ...ClientRole[]];

export const roleSchema = z
  .enum(clientRoles, { error: `must be one of ${clientRoles.map((role) => `"${role}"`).join(", ")}` })
  .transform((role) => roleOfClientRole[role]);

/**
 * A string, or an array of text parts joined with nothing between them: the parts are one message's
 * consecutive text, as the upstream protocols concatenate them. Other part types (images, files, audio) are
 * not served by the gateway and are refused by name rather than silently dropped.
 */
export function textContentSchema<PartType extends string>(partTypes: readonly [PartType, ...PartType[]]) {
  const allowed = partTypes.map((type) => `"${type}"`).join(" or ");
  const partSchema = z.object({
    type: z.enum(partTypes, { error: `must be ${allowed}: only text content is supported` }),
    text: z.string({ error: "must be a string" }),
  });
  return z
    .preprocess(
      // A string is one text part: one path through validation, and errors inside an array keep their index.
      (content) => (typeof content === "string" ? [{ type: partTypes[0], text: content }] : content),
      z.array(partSchema, { error: "must be a string or an array of text parts" }),
    )
    .transform((parts) => parts.map((part) => part.text).join(""));
}
