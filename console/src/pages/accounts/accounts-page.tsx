import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorMessage } from "../../components/ui";
import { adminApi } from "../../lib/api";
import { useI18n } from "../../lib/i18n";
import { IssueKeyCard, SignInLinkCard } from "../user-access-cards";
import { AccountDetails, type AccountRef } from "./account-details";
import { AccountsTable } from "./accounts-table";
import { TopUpCard } from "./top-up-card";

/** Every account with its funds; a top-up or Details shows that account's funds and keys. */
export function AccountsPage() {
  const { t } = useI18n();
  const accounts = useQuery({ queryKey: ["admin", "accounts"], queryFn: adminApi.accounts });
  const [selected, setSelected] = useState<AccountRef | null>(null);
  const rows = accounts.data?.data;
  return (
    <>
      <h1>{t("navAccounts")}</h1>
      <TopUpCard onToppedUp={setSelected} />
      <div className="grid two">
        <SignInLinkCard />
        <IssueKeyCard />
      </div>
      {selected && <AccountDetails account={selected} />}
      <ErrorMessage error={accounts.error} />
      {rows && rows.length === 0 && <p>{t("noAccounts")}</p>}
      {rows && rows.length > 0 && <AccountsTable accounts={rows} onDetails={setSelected} />}
    </>
  );
}
