import { CursorPager } from "../../components/cursor-pager";
import { ErrorMessage } from "../../components/ui";
import { formatCount } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { OwnKeysOnlyNote } from "../members/own-keys-only-note";
import { ActivityFilterForm } from "./activity-filter-form";
import { ActivityTable } from "./activity-table";
import { activityPageRows, useActivity } from "./use-activity";

/**
 * Every generation request of the account, newest first: served, refused (a limit, no credit, an unknown
 * model), failed upstream or cut by the client, with its status, timings, tokens and cost once charged.
 * Filtered on the server; read a page at a time by cursor.
 */
export function ActivityPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const activity = useActivity();
  const { page } = activity;
  const rows = page.data?.data ?? [];
  const keyNames = new Map((activity.keys.data?.data ?? []).map((key) => [key.uuid, key.name]));
  const firstRow = activity.pageIndex * activityPageRows + 1;
  // A key whose spend the session may not see is another member's (C14): its requests never match either.
  const keyChoices = activity.chosenKeys.data?.data.filter((key) => key.spend !== null);
  return (
    <>
      <h1>{t("navActivity")}</h1>
      <p className="muted">{t("activityHelp")}</p>
      <ActivityFilterForm
        filters={activity.filters}
        hasOrganization={hasOrganization}
        keys={keyChoices}
        models={activity.models.data?.data}
        onApply={activity.applyFilters}
        onChooseAccount={activity.setChosenIsOrganization}
        onRefresh={() => void page.refetch()}
      />
      <OwnKeysOnlyNote hasOrganization={hasOrganization} isOrganization={activity.isOrganization} />
      <ErrorMessage error={page.error} />
      {page.data && rows.length === 0 && <p>{t("noActivity")}</p>}
      {/* Also when an older page failed to load: Newer goes back to the page before it. */}
      {(rows.length > 0 || activity.pageIndex > 0) && (
        <section className="card" aria-label={t("navActivity")}>
          {rows.length > 0 && <ActivityTable rows={rows} keyNames={keyNames} />}
          <CursorPager
            label={t("activityPages")}
            cursors={activity.cursors}
            setCursors={activity.setCursors}
            next={page.data?.nextCursor}
            fetching={page.isFetching}
          >
            {rows.length > 0 && (
              <span data-testid="activity-position">
                {formatCount(firstRow)}–{formatCount(firstRow + rows.length - 1)}
              </span>
            )}
          </CursorPager>
        </section>
      )}
    </>
  );
}
