import type { FormEvent } from "react";
import { fieldText } from "../../lib/form-fields";
import { useI18n } from "../../lib/i18n";
import { inputLengthsMax } from "../../lib/input-bounds";

export function AccountSearchForm({ onSearch }: { onSearch(search: string): void }) {
  const { t } = useI18n();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    onSearch(fieldText(new FormData(event.currentTarget), "search"));
  }
  return (
    <form className="row wrap" onSubmit={onSubmit}>
      <label>
        {t("searchAccounts")}
        <input
          name="search"
          type="search"
          maxLength={inputLengthsMax.accountSearch}
          aria-describedby="account-search-help"
        />
      </label>
      <button type="submit">{t("search")}</button>
      <span id="account-search-help" className="muted">
        {t("searchAccountsHelp")}
      </span>
    </form>
  );
}
