import { z } from "zod";
import { isStorableText, unstorableTextMessage } from "../../kernel/storable-text";

/**
 * A string PostgreSQL can store (src/database/storable-text.ts), for the values no edge check sees whole:
 * path parameters, and ids decoded from opaque cursors. Bodies and queries are checked as a whole by
 * `refuseUnstorableText`; a schema that also uses this names the field the same way.
 */
export const storableString = z.string().refine(isStorableText, unstorableTextMessage);
