import { Card, ErrorMessage } from "../../components/ui";
import type { FxRateEntry } from "../../lib/api";
import { formatDecimal, formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/** Every rate recorded, as the chart's text equivalent. */
export function FxHistoryCard(props: { rates: readonly FxRateEntry[] | undefined; error: unknown }) {
  const { t, language } = useI18n();
  return (
    <Card title={t("fxHistory")}>
      <ErrorMessage error={props.error} />
      <div className="table-scroll">
        <table data-testid="fx-table">
          <thead>
            <tr>
              <th scope="col">{t("appliesOn")}</th>
              <th scope="col">{t("rate")}</th>
              <th scope="col">{t("rateDate")}</th>
              <th scope="col">{t("fxSource")}</th>
              <th scope="col">{t("recordedAt")}</th>
            </tr>
          </thead>
          <tbody>
            {props.rates?.map((rate) => (
              <tr key={`${rate.appliesOn}:${rate.recordedAt}`}>
                <td>{rate.appliesOn}</td>
                <td className="number">{formatDecimal(rate.rate)}</td>
                <td>{rate.rateDate}</td>
                <td>{rate.source}</td>
                <td>{formatSeoulDateTime(rate.recordedAt, language)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
