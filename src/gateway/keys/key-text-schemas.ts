import { z } from "zod";
import { keyTextLimits } from "../../kernel/limits";
import { displayNameString } from "../http/display-name-string";

/** A key's name and description, as every door that issues a key takes them (POST /llm/apis, POST /admin/keys). */
export const keyNameSchema = displayNameString(keyTextLimits.nameLengthMax);

export const keyDescriptionSchema = z.string().max(keyTextLimits.descriptionLengthMax).optional().default("");
