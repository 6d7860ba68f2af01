import { z } from "zod";

/**
 * Text a person writes for people to read — in the console, statements and CSV exports — without the
 * characters that change how it, or the text beside it, reads, or that cannot be seen at all. A name is one
 * line: two names that look alike must be one name. A description is free text of several lines: it keeps
 * its tabs and line breaks (`\n`, `\r\n`), and is refused the rest alike.
 *
 * One rule per kind of character, each checked once for both:
 * - control characters (C0, DEL and C1): escapes, and a bare `\r`, which a terminal or log viewer uses to
 *   write over the start of the line;
 * - bidirectional controls (marks, embeddings, overrides, isolates), with which "payroll\u202Efdp.exe" shows
 *   as "payrollexe.pdf";
 * - the line and paragraph separators U+2028 and U+2029: line breaks some readers show and others do not;
 * - invisible characters, Unicode's default-ignorable code points (zero-width space, word joiner, byte order
 *   mark, soft hyphen, the Hangul fillers, tag characters, …), with which "결제" and "결\u200B제" look one.
 *   Those that do something where they stand are kept there: a zero-width joiner inside an emoji sequence
 *   (👩‍💻), the zero-width joiner and non-joiner between letters of the scripts whose spelling uses them
 *   (Persian's non-joiner, the Indic scripts' conjunct forms), and the variation selectors that pick an
 *   emoji's text or emoji form (❤️).
 */

/** Scripts in which a zero-width (non-)joiner between two letters changes how they are drawn. */
const joiningScripts = [
  "Arabic",
  "Syriac",
  "Nko",
  "Mongolian",
  "Devanagari",
  "Bengali",
  "Gurmukhi",
  "Gujarati",
  "Oriya",
  "Tamil",
  "Telugu",
  "Kannada",
  "Malayalam",
  "Sinhala",
] as const;
const joiningScriptCharacter = new RegExp(
  `^[${joiningScripts.map((script) => `\\p{Script_Extensions=${script}}`).join("")}]$`,
  "u",
);
const letterOrMark = /^[\p{L}\p{M}]$/u;
const pictograph = /^\p{Extended_Pictographic}$/u;
/** What may stand before the joiner of an emoji sequence: a pictograph, its emoji form, or a skin tone. */
const emojiSequencePart = /^(?:\p{Extended_Pictographic}|\uFE0F|\p{Emoji_Modifier})$/u;
const emoji = /^\p{Emoji}$/u;

const zeroWidthNonJoiner = "\u200C";
const zeroWidthJoiner = "\u200D";
const textPresentationSelector = "\uFE0E";
const emojiPresentationSelector = "\uFE0F";

const isJoiningLetter = (character: string | undefined) =>
  character !== undefined && letterOrMark.test(character) && joiningScriptCharacter.test(character);

/** Whether the invisible character at `index` of `characters` (code points) does something there. */
function invisibleDoesWork(characters: readonly string[], index: number): boolean {
  const [before, character, after] = [characters[index - 1], characters[index], characters[index + 1]];
  switch (character) {
    case zeroWidthJoiner:
      return (
        (before !== undefined &&
          emojiSequencePart.test(before) &&
          after !== undefined &&
          pictograph.test(after)) ||
        (isJoiningLetter(before) && isJoiningLetter(after))
      );
    case zeroWidthNonJoiner:
      return isJoiningLetter(before) && isJoiningLetter(after);
    case textPresentationSelector:
    case emojiPresentationSelector:
      return before !== undefined && emoji.test(before);
    default:
      return false;
  }
}

interface CharacterRule {
  /** Completes "must not contain …". */
  words: string;
  refuses(characters: readonly string[], index: number): boolean;
}

const matching = (pattern: RegExp) => (characters: readonly string[], index: number) =>
  pattern.test(characters[index]!);

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's purpose.
const controlCharacter = /^[\u0000-\u001f\u007f-\u009f]$/;
const bidirectionalControl = /^[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]$/;
const invisibleCharacter = /^\p{Default_Ignorable_Code_Point}$/u;

const bidirectionalControls: CharacterRule = {
  words: "bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)",
  refuses: matching(bidirectionalControl),
};
const separators: CharacterRule = {
  words: "line or paragraph separators (U+2028, U+2029)",
  refuses: matching(/^[\u2028\u2029]$/),
};
const invisibles: CharacterRule = {
  words:
    "invisible characters (U+200B, U+2060, U+FEFF, U+00AD, U+3164 and the other default-ignorable code points, but for the joiners and variation selectors that join letters or form an emoji)",
  refuses: (characters, index) =>
    invisibleCharacter.test(characters[index]!) && !invisibleDoesWork(characters, index),
};

/** A name's rules, in the order a character is named by: a bidirectional control is also default-ignorable. */
const nameRules: readonly CharacterRule[] = [
  { words: "control characters (U+0000–U+001F, U+007F–U+009F)", refuses: matching(controlCharacter) },
  bidirectionalControls,
  separators,
  invisibles,
];

/** A description's: a name's, but for tabs and line breaks (`\r` only as the start of `\r\n`). */
const descriptionRules: readonly CharacterRule[] = [
  {
    words: "control characters (U+0000–U+001F, U+007F–U+009F) other than tab and line breaks (\\n, \\r\\n)",
    refuses: (characters, index) => {
      const character = characters[index]!;
      if (character === "\t" || character === "\n") return false;
      if (character === "\r") return characters[index + 1] !== "\n";
      return controlCharacter.test(character);
    },
  },
  bidirectionalControls,
  separators,
  invisibles,
];

function refusalOf(text: string, rules: readonly CharacterRule[]): string | undefined {
  const characters = Array.from(text);
  for (let index = 0; index < characters.length; index++) {
    const broken = rules.find((rule) => rule.refuses(characters, index));
    if (broken !== undefined)
      return `must not contain ${broken.words}; it has ${codePointOf(characters[index]!)}`;
  }
  return undefined;
}

function refusingCharacters(rules: readonly CharacterRule[]) {
  return (text: string, context: z.RefinementCtx) => {
    const message = refusalOf(text, rules);
    if (message !== undefined) context.addIssue({ code: "custom", message });
  };
}

/** A text field's type refusal in the words of the rest of the API: "is required" when absent. */
const textField = () =>
  z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") });

const rulesText = (rules: readonly CharacterRule[]) => `no ${rules.map((rule) => rule.words).join(", no ")}`;

/** A name a person gives something for people to read: trimmed, at least one character, one line. */
export function displayNameString(lengthMax: number) {
  return textField()
    .trim()
    .min(1, "is required")
    .max(lengthMax)
    .superRefine(refusingCharacters(nameRules))
    .meta({ description: `1 to ${lengthMax} characters once trimmed; ${rulesText(nameRules)}` });
}

/**
 * A line a person writes for people to read beside figures — a top-up's reference on a statement and in a
 * CSV — as typed and possibly empty: a name's characters, without a name's trimming.
 */
export function displayLineString(lengthMax: number) {
  return textField()
    .max(lengthMax)
    .superRefine(refusingCharacters(nameRules))
    .meta({ description: `At most ${lengthMax} characters; ${rulesText(nameRules)}` });
}

/** What a person writes to describe something: free text of several lines, as typed. */
export function displayDescriptionString(lengthMax: number) {
  return textField()
    .max(lengthMax)
    .superRefine(refusingCharacters(descriptionRules))
    .meta({ description: `At most ${lengthMax} characters; ${rulesText(descriptionRules)}` });
}

/** `U+202E`: how a character no one can see is named. */
function codePointOf(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}
