import { keyTextLimits } from "../../kernel/limits";
import { displayDescriptionString, displayNameString } from "../http/display-name-string";

/** A key's name and description, as every door that issues a key takes them (POST /llm/apis, POST /admin/keys). */
export const keyNameSchema = displayNameString(keyTextLimits.nameLengthMax);

export const keyDescriptionSchema = displayDescriptionString(keyTextLimits.descriptionLengthMax)
  .optional()
  .default("");
