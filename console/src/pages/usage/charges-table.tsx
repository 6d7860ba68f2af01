import { CursorPager } from "../../components/cursor-pager";
import { ErrorMessage } from "../../components/ui";
import type { BillingHistoryEntry } from "../../lib/api";
import { formatCount } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { ChargeRow } from "./charge-row";
import { chargesPageRows, useChargesCsvExport, useChargesPages } from "./use-charges";
import type { DateRange } from "./use-usage-summary";

/** The range's charges a page at a time, newest first, and all of them as a CSV download. */
export function ChargesTable(props: {
  range: DateRange;
  isOrganization: boolean;
  chargeCount: number | null;
}) {
  const { t } = useI18n();
  const { page, rows, cursors, setCursors, pageIndex } = useChargesPages(props.range, props.isOrganization);
  const csv = useChargesCsvExport(props.range, props.isOrganization);
  const firstRow = pageIndex * chargesPageRows + 1;
  return (
    <section className="card" aria-labelledby="charges-title">
      <div className="row spread">
        <h2 id="charges-title">{t("charges")}</h2>
        <button
          type="button"
          onClick={() => void csv.download()}
          disabled={csv.exporting || rows.length === 0}
        >
          {csv.exporting ? t("preparingCsv") : t("downloadCsv")}
        </button>
      </div>
      <ErrorMessage error={page.error ?? csv.error} />
      {page.data && rows.length === 0 && pageIndex === 0 && <p>{t("noCharges")}</p>}
      {rows.length > 0 && <ChargeRows rows={rows} />}
      {/* Also when an older page failed to load: Newer goes back to the page before it. */}
      {(rows.length > 0 || pageIndex > 0) && (
        <CursorPager
          label={t("chargesPages")}
          cursors={cursors}
          setCursors={setCursors}
          next={page.data?.nextCursor}
          fetching={page.isFetching}
        >
          {rows.length > 0 && (
            <span data-testid="charges-position" aria-live="polite">
              {formatCount(firstRow)}–{formatCount(firstRow + rows.length - 1)}
              {props.chargeCount !== null && ` / ${formatCount(props.chargeCount)}`}
            </span>
          )}
        </CursorPager>
      )}
    </section>
  );
}

function ChargeRows(props: { rows: readonly BillingHistoryEntry[] }) {
  const { t } = useI18n();
  return (
    <div className="table-scroll">
      <table data-testid="charges-table">
        <thead>
          <tr>
            <th scope="col">{t("time")}</th>
            <th scope="col">{t("model")}</th>
            <th scope="col">{t("key")}</th>
            <th scope="col">{t("tokens")}</th>
            <th scope="col">{t("amount")}</th>
            <th scope="col">{t("details")}</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((entry) => (
            <ChargeRow key={entry.requestId} entry={entry} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
