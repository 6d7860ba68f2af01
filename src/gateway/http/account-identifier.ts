import { accountIdWhitespaceProblemOf } from "../../kernel/account-id";
import { sessionLimits } from "../../kernel/limits";
import { storableString } from "./storable-string";

/**
 * An account's or a member's id as a path, a query, a body or a cursor carries it (src/kernel/account-id.ts):
 * refused, never trimmed, when blank or with whitespace at either end, so that it names exactly the account a
 * session names.
 */
export const accountIdentifier = storableString
  .min(1, "is required")
  .max(sessionLimits.accountIdLengthMax)
  .superRefine((id, context) => {
    const problem = accountIdWhitespaceProblemOf(id);
    if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
  })
  .meta({
    description: `1 to ${sessionLimits.accountIdLengthMax} characters, neither blank nor with whitespace at either end`,
  });
