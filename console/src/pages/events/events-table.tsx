import { CopyableCode } from "../../components/copy-button";
import type { LedgerEventRow } from "../../lib/api";
import { formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

export function EventsTable({ rows }: { rows: readonly LedgerEventRow[] }) {
  const { t } = useI18n();
  return (
    <div className="table-scroll">
      <table data-testid="events-table">
        <thead>
          <tr>
            <th scope="col">{t("eventId")}</th>
            <th scope="col">{t("recordedAt")}</th>
            <th scope="col">{t("stream")}</th>
            <th scope="col">{t("eventType")}</th>
            <th scope="col">{t("actor")}</th>
            <th scope="col">{t("data")}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <EventRow key={row.eventId} row={row} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function EventRow({ row }: { row: LedgerEventRow }) {
  const { t, language } = useI18n();
  return (
    <tr data-testid="event-row">
      <td>
        <CopyableCode text={row.eventId} testId="event-id" codeClassName="event-id" buttonClassName="small">
          <span className="visually-hidden"> {row.eventId}</span>
        </CopyableCode>
        <div className="muted">
          {t("position")} <code>{row.position}</code>
        </div>
      </td>
      <td>{formatSeoulDateTime(row.recordedAt, language)}</td>
      <td>{row.streamId}</td>
      <td>{row.type}</td>
      <td>{row.metadata.actor}</td>
      <td>
        <details>
          <summary>{t("data")}</summary>
          <pre>{JSON.stringify(row.data, null, 2)}</pre>
        </details>
      </td>
    </tr>
  );
}
