import { sessionLimits } from "./limits";
import { isStorableText } from "./storable-text";

/**
 * The id of a user or an organization, wherever one is taken — a session, a sign-in claim, a path, a query, a
 * body, a cursor — by one rule, so that whoever can sign in can also be funded, given a role and looked up:
 * text PostgreSQL can store, 1 to 256 characters, neither blank nor with whitespace at either end. An id of
 * spaces names no one, and " alice" would show as "alice" in the console while being another account. Ids
 * are compared as given, never trimmed here: the few bodies that trim (whom an admin signs in or issues a key
 * for) do so before this rule.
 */
export function isAccountId(id: unknown): id is string {
  return (
    typeof id === "string" &&
    id.length <= sessionLimits.accountIdLengthMax &&
    isStorableText(id) &&
    accountIdWhitespaceProblemOf(id) === undefined
  );
}

const notWhitespace = /\S/;
const whitespaceAtAnEnd = /^\s|\s$/;

/** What is wrong with an id's whitespace, completing "`<field>`: …"; undefined when nothing is. */
export function accountIdWhitespaceProblemOf(id: string): string | undefined {
  if (!notWhitespace.test(id)) return "must not be blank";
  if (whitespaceAtAnEnd.test(id)) return "must not start or end with whitespace";
  return undefined;
}
