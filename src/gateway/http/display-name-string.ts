import { z } from "zod";

/**
 * A name a person gives something for people to read — in the console, statements and CSV exports:
 * trimmed, at least one character, and without the characters that change how it, or the text beside it,
 * reads: control characters (C0, DEL and C1: line breaks, escapes) and the bidirectional controls (marks,
 * embeddings, overrides, isolates), with which "payroll\u202Efdp.exe" shows as "payrollexe.pdf".
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's purpose.
const unreadableCharacter = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

export const displayNameCharactersRule =
  "must not contain control characters (U+0000–U+001F, U+007F–U+009F) or bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)";

export function displayNameString(lengthMax: number) {
  return z
    .string()
    .trim()
    .min(1, "is required")
    .max(lengthMax)
    .superRefine((name, context) => {
      const found = unreadableCharacter.exec(name)?.[0];
      if (found !== undefined)
        context.addIssue({
          code: "custom",
          message: `${displayNameCharactersRule}; it has ${codePointOf(found)}`,
        });
    })
    .meta({ description: `1 to ${lengthMax} characters once trimmed; ${displayNameCharactersRule}` });
}

/** `U+202E`: how a character no one can see is named. */
function codePointOf(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}
