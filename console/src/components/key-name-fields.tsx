import { useI18n } from "../lib/i18n";
import { inputLengthsMax } from "../lib/input-bounds";

/** A key's name and description, as every form that issues a key asks for them (bounds as the API's). */
export function KeyNameFields() {
  const { t } = useI18n();
  return (
    <>
      <label>
        {t("keyName")}
        <input name="name" required maxLength={inputLengthsMax.keyName} />
      </label>
      <label>
        {t("keyDescription")}
        <input name="description" maxLength={inputLengthsMax.keyDescription} />
      </label>
    </>
  );
}
