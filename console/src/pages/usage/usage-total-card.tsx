import { Card } from "../../components/ui";
import { formatChargeWon, formatCount } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

export function UsageTotalCard({ totals }: { totals: { won: string; requests: number; tokens: number } }) {
  const { t } = useI18n();
  return (
    <div className="grid">
      <Card title={t("total")}>
        <p className="figure" data-testid="usage-total-won">
          {formatChargeWon(totals.won)}
        </p>
        <p className="muted">
          {t("requests")}: <span data-testid="usage-total-requests">{formatCount(totals.requests)}</span> ·{" "}
          {t("tokens")}: {formatCount(totals.tokens)}
        </p>
      </Card>
    </div>
  );
}
