import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import type { LedgerEventType } from "../../../src/ledger/events";
import { CursorPager } from "../components/cursor-pager";
import { ErrorMessage } from "../components/ui";
import { adminApi } from "../lib/api";
import { formatSeoulDateTime } from "../lib/format";
import { useI18n } from "../lib/i18n";

/**
 * The raw ledger, newest first, filtered by stream and event type on the server and read a page at a time
 * (`before` the last position shown). Each event's id is shown whole and copyable: `ledger prove` takes it
 * (or the position shown beside it).
 */

const pageRows = 100;

/** Every event type, by name: a record so a type added to the catalog and missing here fails the build. */
const eventTypeNames: Record<LedgerEventType, true> = {
  ApiKeyIssued: true,
  ApiKeyStatusChanged: true,
  ApiKeyDeleted: true,
  ApiKeyLimitsSet: true,
  CreditToppedUp: true,
  ModelPriceSet: true,
  DiscountSet: true,
  FxRateUpdated: true,
  UsageAuthorized: true,
  UsageRecorded: true,
  UsageVoided: true,
  UsageCharged: true,
};
const eventTypes = Object.keys(eventTypeNames) as LedgerEventType[];

export function EventsPage() {
  const { t, language } = useI18n();
  const [filter, setFilter] = useState({ stream: "", type: "" });
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const pageIndex = cursors.length - 1;
  const page = useQuery({
    queryKey: ["admin", "events", filter, cursors[pageIndex]],
    queryFn: () =>
      adminApi.events({
        ...(filter.stream ? { stream: filter.stream } : {}),
        ...(filter.type ? { type: filter.type } : {}),
        before: cursors[pageIndex],
        limit: pageRows,
      }),
    placeholderData: keepPreviousData,
  });
  const rows = page.data?.data ?? [];

  function onFilter(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setFilter({
      stream: String(form.get("stream") ?? "").trim(),
      type: String(form.get("type") ?? ""),
    });
    setCursors([undefined]);
  }

  return (
    <>
      <h1>{t("navEvents")}</h1>
      <form className="row wrap" onSubmit={onFilter} aria-label={t("filter")}>
        <label>
          {t("stream")}
          <input name="stream" placeholder="account-user-demo" />
        </label>
        <label>
          {t("eventType")}
          <select name="type" defaultValue="">
            <option value="">{t("allTypes")}</option>
            {eventTypes.map((type) => (
              <option key={type}>{type}</option>
            ))}
          </select>
        </label>
        <button type="submit">{t("filter")}</button>
      </form>
      <p className="muted">
        {t("eventsHelp")} <code>npm run ledger -- prove &lt;event id&gt;</code>
      </p>
      <ErrorMessage error={page.error} />
      {page.data && rows.length === 0 && <p>{t("noEvents")}</p>}
      {rows.length > 0 && (
        <section className="card" aria-label={t("navEvents")}>
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
                  <tr key={row.eventId} data-testid="event-row">
                    <td>
                      <code className="event-id" data-testid="event-id">
                        {row.eventId}
                      </code>{" "}
                      <CopyEventId eventId={row.eventId} />
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
                ))}
              </tbody>
            </table>
          </div>
          <CursorPager
            label={t("eventPages")}
            cursors={cursors}
            setCursors={setCursors}
            next={page.data?.next}
            fetching={page.isFetching}
          ></CursorPager>
        </section>
      )}
    </>
  );
}

function CopyEventId({ eventId }: { eventId: string }) {
  const { t } = useI18n();
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="small"
      onClick={async () => {
        await navigator.clipboard.writeText(eventId);
        setCopied(true);
      }}
    >
      {copied ? t("copied") : t("copy")}
      <span className="visually-hidden"> {eventId}</span>
    </button>
  );
}
