import type { FormEvent } from "react";
import type { ActivityFilters, ApiKey, PricedModel, RequestOutcome } from "../../lib/api";
import { optionalFieldText } from "../../lib/form-fields";
import { useI18n } from "../../lib/i18n";
import { systemText } from "../../lib/system-text";
import { outcomeLabels, requestOutcomes } from "./request-outcomes";

/** The filters a submitted form states; an empty field filters nothing. */
function filtersOf(form: FormData): ActivityFilters {
  return {
    from: optionalFieldText(form, "from"),
    to: optionalFieldText(form, "to"),
    model: optionalFieldText(form, "model"),
    answeredBy: optionalFieldText(form, "answeredBy"),
    keyId: optionalFieldText(form, "keyId"),
    status: optionalFieldText(form, "status"),
    outcome: optionalFieldText(form, "outcome") as RequestOutcome | undefined,
  };
}

/** Applied on submit, not as each field changes: one request per choice of filters. */
export function ActivityFilterForm(props: {
  filters: ActivityFilters;
  hasOrganization: boolean;
  keys: readonly ApiKey[] | undefined;
  models: readonly PricedModel[] | undefined;
  onApply(filters: ActivityFilters, isOrganization: boolean): void;
  /** The account picked, before Apply: the key and model choices follow it. */
  onChooseAccount(isOrganization: boolean): void;
  onRefresh(): void;
}) {
  const { t } = useI18n();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    props.onApply(filtersOf(form), form.get("scope") === "organization");
  }
  return (
    <form className="row wrap" onSubmit={onSubmit} aria-label={t("filter")}>
      <label>
        {t("from")}
        <input type="date" name="from" defaultValue={props.filters.from} />
      </label>
      <label>
        {t("to")}
        <input type="date" name="to" defaultValue={props.filters.to} />
      </label>
      <label>
        {t("scope")}
        <select
          name="scope"
          defaultValue="personal"
          onChange={(event) => props.onChooseAccount(event.currentTarget.value === "organization")}
        >
          <option value="personal">{t("personal")}</option>
          {props.hasOrganization && <option value="organization">{t("organization")}</option>}
        </select>
      </label>
      <ChoiceFilters keys={props.keys} models={props.models} />
      <label>
        {t("httpStatus")}
        <input name="status" inputMode="numeric" pattern="[1-5]\d\d" placeholder="429" size={5} />
      </label>
      <button type="submit">{t("apply")}</button>
      <button type="button" onClick={props.onRefresh}>
        {t("refresh")}
      </button>
    </form>
  );
}

/** Model requested, fallback that answered, key and outcome: each "any" by default. */
function ChoiceFilters(props: {
  keys: readonly ApiKey[] | undefined;
  models: readonly PricedModel[] | undefined;
}) {
  const { t, language } = useI18n();
  return (
    <>
      <label>
        {t("model")}
        <select name="model" defaultValue="">
          <option value="">{t("anyModel")}</option>
          {props.models?.map((model) => (
            <option key={model.id}>{model.id}</option>
          ))}
        </select>
      </label>
      <label>
        {t("answeredBy")}
        <select name="answeredBy" defaultValue="">
          <option value="">{t("anyModel")}</option>
          {props.models?.map((model) => (
            <option key={model.id}>{model.id}</option>
          ))}
        </select>
      </label>
      <label>
        {t("key")}
        <select name="keyId" defaultValue="">
          <option value="">{t("anyKey")}</option>
          {props.keys?.map((key) => (
            <option key={key.uuid} value={key.uuid}>
              {systemText(key.name, language)} ({key.keyPreview})
            </option>
          ))}
        </select>
      </label>
      <label>
        {t("outcome")}
        <select name="outcome" defaultValue="">
          <option value="">{t("anyOutcome")}</option>
          {requestOutcomes.map((outcome) => (
            <option key={outcome} value={outcome}>
              {t(outcomeLabels[outcome])}
            </option>
          ))}
        </select>
      </label>
    </>
  );
}
