import { useI18n } from "../../lib/i18n";

/** Personal or organization keys, as radio buttons: the organization one is there but off without one. */
export function KeyScopeChoice(props: {
  isOrganization: boolean;
  hasOrganization: boolean;
  onChange(isOrganization: boolean): void;
}) {
  const { t } = useI18n();
  return (
    <fieldset className="segmented">
      <legend>{t("scope")}</legend>
      <label>
        <input
          type="radio"
          name="scope"
          checked={!props.isOrganization}
          onChange={() => props.onChange(false)}
        />
        {t("personal")}
      </label>
      <label>
        <input
          type="radio"
          name="scope"
          checked={props.isOrganization}
          disabled={!props.hasOrganization}
          onChange={() => props.onChange(true)}
        />
        {t("organization")}
      </label>
    </fieldset>
  );
}
