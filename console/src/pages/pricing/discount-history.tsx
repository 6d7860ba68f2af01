import { useQuery } from "@tanstack/react-query";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi, type DiscountChange } from "../../lib/api";
import { formatRate, formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/** Every discount change of every scope, newest first, replaced and removed rules included. */
export function DiscountHistory() {
  const { t, language } = useI18n();
  const history = useQuery({ queryKey: ["admin", "discount-history"], queryFn: adminApi.discountHistory });
  return (
    <Card title={t("discountHistory")}>
      <ErrorMessage error={history.error} />
      {history.data && history.data.data.length === 0 && <p>{t("noChanges")}</p>}
      {history.data && history.data.data.length > 0 && (
        <div className="table-scroll">
          <table data-testid="discount-history-table">
            <thead>
              <tr>
                <th scope="col">{t("effectiveAt")}</th>
                <th scope="col">{t("model")}</th>
                <th scope="col">{t("organization")}</th>
                <th scope="col">{t("rate")}</th>
                <th scope="col">{t("changedBy")}</th>
              </tr>
            </thead>
            <tbody>
              {history.data.data.map((change: DiscountChange) => (
                <tr key={change.eventId}>
                  <td>{formatSeoulDateTime(change.effectiveAt, language)}</td>
                  <td>{change.model ?? t("anyModel")}</td>
                  <td>{change.organizationId ?? t("anyAccount")}</td>
                  <td className="number">
                    {change.rate === null ? t("discountRemoved") : formatRate(change.rate)}
                  </td>
                  <td>{change.actor}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Card>
  );
}
