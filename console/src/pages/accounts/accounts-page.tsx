import { useState } from "react";
import { CursorPager } from "../../components/cursor-pager";
import { ErrorMessage } from "../../components/ui";
import { useI18n } from "../../lib/i18n";
import { IssueKeyCard, SignInLinkCard } from "../user-access-cards";
import { AccountDetails, type AccountRef } from "./account-details";
import { AccountSearchForm } from "./account-search-form";
import { AccountsTable } from "./accounts-table";
import { TopUpCard } from "./top-up-card";
import { useAccountPages } from "./use-account-pages";

/**
 * Every account with its funds, a page at a time and searched by id on the server; a top-up or Details shows
 * that account's funds and keys.
 */
export function AccountsPage() {
  const { t } = useI18n();
  const { page, cursors, setCursors, applySearch } = useAccountPages();
  const [selected, setSelected] = useState<AccountRef | null>(null);
  const rows = page.data?.data ?? [];
  return (
    <>
      <h1>{t("navAccounts")}</h1>
      <TopUpCard onToppedUp={setSelected} />
      <div className="grid two">
        <SignInLinkCard />
        <IssueKeyCard />
      </div>
      {selected && <AccountDetails account={selected} />}
      <AccountSearchForm onSearch={applySearch} />
      <ErrorMessage error={page.error} />
      {page.data && rows.length === 0 && <p>{t("noAccounts")}</p>}
      {/* Also when a later page failed to load: Newer goes back to the page before it. */}
      {(rows.length > 0 || cursors.length > 1) && (
        <section className="card" aria-label={t("navAccounts")}>
          {rows.length > 0 && <AccountsTable accounts={rows} onDetails={setSelected} />}
          <CursorPager
            label={t("accountPages")}
            cursors={cursors}
            setCursors={setCursors}
            next={page.data?.nextCursor}
            fetching={page.isFetching}
          />
        </section>
      )}
    </>
  );
}
