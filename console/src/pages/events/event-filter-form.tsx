import type { FormEvent } from "react";
import { fieldText } from "../../lib/form-fields";
import { useI18n } from "../../lib/i18n";
import { eventTypes } from "./event-types";
import type { EventFilter } from "./use-event-pages";

export function EventFilterForm({ onApply }: { onApply(filter: EventFilter): void }) {
  const { t } = useI18n();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    onApply({ stream: fieldText(form, "stream"), type: fieldText(form, "type") });
  }
  return (
    <form className="row wrap" onSubmit={onSubmit} aria-label={t("filter")}>
      <label>
        {t("stream")}
        <input name="stream" placeholder="account-user-demo" />
      </label>
      <label>
        {t("eventType")}
        <select name="type" defaultValue="">
          <option value="">{t("allTypes")}</option>
          {eventTypes.map((type) => (
            <option key={type}>{type}</option>
          ))}
        </select>
      </label>
      <button type="submit">{t("filter")}</button>
    </form>
  );
}
