import type { FormEvent } from "react";
import { ScopeSelect } from "../../components/scope-select";
import { useI18n } from "../../lib/i18n";
import type { DateRange, UsageGrouping } from "./use-usage-summary";

/** The range applies on submit (and only in order); the account and the grouping apply as chosen. */
export function UsageFilterForm(props: {
  range: DateRange;
  isOrganization: boolean;
  hasOrganization: boolean;
  groupBy: UsageGrouping;
  onRange(range: DateRange): void;
  onScope(isOrganization: boolean): void;
  onGroupBy(groupBy: UsageGrouping): void;
}) {
  const { t } = useI18n();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const from = String(form.get("from"));
    const to = String(form.get("to"));
    if (from && to && from <= to) props.onRange({ from, to });
  }
  return (
    <form className="row wrap" onSubmit={onSubmit} aria-label={t("filter")}>
      <label>
        {t("from")}
        <input type="date" name="from" defaultValue={props.range.from} required />
      </label>
      <label>
        {t("to")}
        <input type="date" name="to" defaultValue={props.range.to} required />
      </label>
      <button type="submit">{t("apply")}</button>
      <ScopeSelect
        isOrganization={props.isOrganization}
        hasOrganization={props.hasOrganization}
        onChange={props.onScope}
      />
      <label>
        {t("groupBy")}
        <select
          value={props.groupBy}
          onChange={(event) => props.onGroupBy(event.target.value as UsageGrouping)}
        >
          <option value="model">{t("model")}</option>
          <option value="key">{t("key")}</option>
        </select>
      </label>
    </form>
  );
}
