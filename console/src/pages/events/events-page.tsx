import { CursorPager } from "../../components/cursor-pager";
import { ErrorMessage } from "../../components/ui";
import { useI18n } from "../../lib/i18n";
import { EventFilterForm } from "./event-filter-form";
import { EventsTable } from "./events-table";
import { useEventPages } from "./use-event-pages";

/**
 * The raw ledger, newest first, filtered by stream and event type on the server and read a page at a time
 * (`before` the last position shown). Each event's id is shown whole and copyable: `ledger prove` takes it
 * (or the position shown beside it).
 */
export function EventsPage() {
  const { t } = useI18n();
  const { page, cursors, setCursors, applyFilter } = useEventPages();
  const rows = page.data?.data ?? [];
  return (
    <>
      <h1>{t("navEvents")}</h1>
      <EventFilterForm onApply={applyFilter} />
      <p className="muted">
        {t("eventsHelp")} <code>npm run ledger -- prove &lt;event id&gt;</code>
      </p>
      <ErrorMessage error={page.error} />
      {page.data && rows.length === 0 && <p>{t("noEvents")}</p>}
      {/* Also when an older page failed to load: Newer goes back to the page before it. */}
      {(rows.length > 0 || cursors.length > 1) && (
        <section className="card" aria-label={t("navEvents")}>
          {rows.length > 0 && <EventsTable rows={rows} />}
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
