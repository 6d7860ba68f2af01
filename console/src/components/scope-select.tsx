import { useI18n } from "../lib/i18n";

/** Which account a page shows: the session's own, or its organization's when the session has one. */
export function ScopeSelect(props: {
  isOrganization: boolean;
  hasOrganization: boolean;
  onChange(isOrganization: boolean): void;
  disabled?: boolean;
}) {
  const { t } = useI18n();
  return (
    <label>
      {t("scope")}
      <select
        value={props.isOrganization ? "organization" : "personal"}
        onChange={(event) => props.onChange(event.target.value === "organization")}
        disabled={props.disabled}
      >
        <option value="personal">{t("personal")}</option>
        {props.hasOrganization && <option value="organization">{t("organization")}</option>}
      </select>
    </label>
  );
}
