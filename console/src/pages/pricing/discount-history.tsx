import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { CursorPager } from "../../components/cursor-pager";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi, type DiscountChange } from "../../lib/api";
import { formatRate, formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/** Every discount change of every scope, newest first, replaced and removed rules included, a page at a time. */
export function DiscountHistory() {
  const { t, language } = useI18n();
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const history = useQuery({
    queryKey: ["admin", "discount-history", cursor],
    queryFn: () => adminApi.discountHistory(cursor),
    placeholderData: keepPreviousData,
  });
  const changes = history.data?.data ?? [];
  return (
    <Card title={t("discountHistory")}>
      <ErrorMessage error={history.error} />
      {history.data && changes.length === 0 && <p>{t("noChanges")}</p>}
      {changes.length > 0 && (
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
              {changes.map((change: DiscountChange) => (
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
      {/* Also when an older page failed to load: Newer goes back to the page before it. */}
      {(changes.length > 0 || cursors.length > 1) && (
        <CursorPager
          label={t("discountHistoryPages")}
          cursors={cursors}
          setCursors={setCursors}
          next={history.data?.nextCursor}
          fetching={history.isFetching}
        />
      )}
    </Card>
  );
}
