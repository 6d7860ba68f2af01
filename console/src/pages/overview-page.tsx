import { useQuery } from "@tanstack/react-query";
import { Card, ErrorMessage } from "../components/ui";
import { type AccountFunds, userApi } from "../lib/api";
import { formatWon } from "../lib/format";
import { useI18n } from "../lib/i18n";

export function OverviewPage() {
  const { t } = useI18n();
  // Charges, holds and top-ups land while the page is open: the balance is read again every few seconds.
  const balance = useQuery({ queryKey: ["balance"], queryFn: userApi.balance, refetchInterval: 5_000 });
  return (
    <>
      <h1>{t("navOverview")}</h1>
      <ErrorMessage error={balance.error} />
      <div className="grid">
        <Card title={t("personalBalance")}>
          {balance.data ? (
            <FundsFigures funds={balance.data.user} testId="personal-balance" />
          ) : (
            <p>{t("loading")}</p>
          )}
        </Card>
        <Card title={t("organizationBalance")}>
          {balance.data?.organization ? (
            <FundsFigures funds={balance.data.organization} testId="organization-balance" />
          ) : (
            <p>{balance.data ? t("noOrganization") : t("loading")}</p>
          )}
        </Card>
      </div>
    </>
  );
}

/** The balance, and beside it what is held by requests in flight and pending (recorded, not charged). */
function FundsFigures({ funds, testId }: { funds: AccountFunds; testId: string }) {
  const { t } = useI18n();
  return (
    <>
      <p className="figure" data-testid={testId}>
        {formatWon(funds.balanceWon)}
      </p>
      <dl className="funds">
        <dt title={t("heldHelp")}>{t("held")}</dt>
        <dd data-testid={`${testId}-held`}>{formatWon(funds.heldWon)}</dd>
        <dt title={t("pendingHelp")}>{t("pending")}</dt>
        <dd data-testid={`${testId}-pending`}>{formatWon(funds.pendingWon)}</dd>
      </dl>
    </>
  );
}
