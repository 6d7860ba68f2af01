import type { AccountSummary } from "../../lib/api";
import { formatCount, formatWon } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import type { AccountRef } from "./account-details";

export function AccountsTable(props: {
  accounts: readonly AccountSummary[];
  onDetails(account: AccountRef): void;
}) {
  const { t } = useI18n();
  return (
    <div className="table-scroll">
      <table data-testid="accounts-table">
        <thead>
          <tr>
            <th scope="col">{t("kind")}</th>
            <th scope="col">{t("id")}</th>
            <th scope="col">{t("balance")}</th>
            <th scope="col">{t("held")}</th>
            <th scope="col">{t("pending")}</th>
            <th scope="col">{t("pendingRequests")}</th>
            <th scope="col">{t("accountDetails")}</th>
          </tr>
        </thead>
        <tbody>
          {props.accounts.map((account) => (
            <AccountRow key={`${account.kind}:${account.id}`} account={account} onDetails={props.onDetails} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function AccountRow(props: { account: AccountSummary; onDetails(account: AccountRef): void }) {
  const { t } = useI18n();
  const { account } = props;
  return (
    <tr>
      <td>{account.kind}</td>
      <td>{account.id}</td>
      <td className="number">{formatWon(account.balanceWon)}</td>
      <td className="number">{formatWon(account.heldWon)}</td>
      <td className="number">{formatWon(account.pendingWon)}</td>
      <td className="number">{formatCount(account.pendingCharges)}</td>
      <td>
        <button type="button" onClick={() => props.onDetails({ kind: account.kind, id: account.id })}>
          {t("accountDetails")} <span className="visually-hidden">{account.id}</span>
        </button>
      </td>
    </tr>
  );
}
