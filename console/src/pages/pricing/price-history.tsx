import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { CursorPager } from "../../components/cursor-pager";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi, type PriceChange } from "../../lib/api";
import { formatDecimal, formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/** Every price change, newest first, with who made it: all models or one, a page at a time. */
export function PriceHistory({ models }: { models: readonly string[] }) {
  const { t } = useI18n();
  const [model, setModel] = useState("");
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const history = useQuery({
    queryKey: ["admin", "price-history", model, cursor],
    queryFn: () => adminApi.priceHistory(model || null, cursor),
    placeholderData: keepPreviousData,
  });
  const changes = history.data?.data ?? [];
  return (
    <Card title={t("priceHistory")}>
      <label>
        {t("historyModel")}{" "}
        <select
          value={model}
          onChange={(event) => {
            // Another model's changes are read again from the newest.
            setModel(event.target.value);
            setCursors([undefined]);
          }}
        >
          <option value="">{t("model_all")}</option>
          {models.map((slug) => (
            <option key={slug}>{slug}</option>
          ))}
        </select>
      </label>
      <ErrorMessage error={history.error} />
      {history.data && changes.length === 0 && <p>{t("noChanges")}</p>}
      {changes.length > 0 && <PriceHistoryTable changes={changes} />}
      {/* Also when an older page failed to load: Newer goes back to the page before it. */}
      {(changes.length > 0 || cursors.length > 1) && (
        <CursorPager
          label={t("priceHistoryPages")}
          cursors={cursors}
          setCursors={setCursors}
          next={history.data?.nextCursor}
          fetching={history.isFetching}
        />
      )}
    </Card>
  );
}

/** The actor, and the correlation id of the request that made the change when there was one. */
function PriceHistoryTable({ changes }: { changes: readonly PriceChange[] }) {
  const { t, language } = useI18n();
  return (
    <div className="table-scroll">
      <table data-testid="price-history-table">
        <thead>
          <tr>
            <th scope="col">{t("effectiveAt")}</th>
            <th scope="col">{t("model")}</th>
            <th scope="col">{t("inputPrice")}</th>
            <th scope="col">{t("cachedPrice")}</th>
            <th scope="col">{t("outputPrice")}</th>
            <th scope="col">{t("changedBy")}</th>
          </tr>
        </thead>
        <tbody>
          {changes.map((change) => (
            <tr key={change.eventId}>
              <td>{formatSeoulDateTime(change.effectiveAt, language)}</td>
              <td>{change.model}</td>
              <td className="number">${formatDecimal(change.inputUsdPer1M)}</td>
              <td className="number">${formatDecimal(change.cachedInputUsdPer1M)}</td>
              <td className="number">${formatDecimal(change.outputUsdPer1M)}</td>
              <td>
                {change.actor}
                {change.correlationId && (
                  <>
                    {" "}
                    <code>{change.correlationId}</code>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
