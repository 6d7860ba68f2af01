import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { CursorPager } from "../components/cursor-pager";
import { ErrorMessage } from "../components/ui";
import { type ActivityEntry, type ActivityFilters, type RequestOutcome, userApi } from "../lib/api";
import { addDays, formatChargeWon, formatCount, formatSeoulDateTime, seoulDateOf } from "../lib/format";
import { type MessageKey, useI18n } from "../lib/i18n";

/**
 * Every generation request of the account, newest first: served, refused (a limit, no credit, an unknown
 * model), failed upstream or cut by the client, with its status, timings, tokens and cost once charged.
 * Filtered on the server; read a page at a time by cursor.
 */

const pageRows = 50;
const outcomes: readonly RequestOutcome[] = ["served", "refused", "failed", "cut"];

const outcomeLabels: Record<RequestOutcome, MessageKey> = {
  served: "outcomeServed",
  refused: "outcomeRefused",
  failed: "outcomeFailed",
  cut: "outcomeCut",
};

function field(form: FormData, name: string): string | undefined {
  const value = String(form.get(name) ?? "").trim();
  return value === "" ? undefined : value;
}

export function ActivityPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const today = seoulDateOf(new Date());
  const [filters, setFilters] = useState<ActivityFilters>({ from: addDays(today, -29), to: today });
  const [isOrganization, setIsOrganization] = useState(false);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const pageIndex = cursors.length - 1;
  const keys = useQuery({ queryKey: ["keys", isOrganization], queryFn: () => userApi.keys(isOrganization) });
  const models = useQuery({
    queryKey: ["models", isOrganization],
    queryFn: () => userApi.models(isOrganization),
  });
  const page = useQuery({
    queryKey: ["activity", filters, isOrganization, cursors[pageIndex]],
    queryFn: () => userApi.activity(filters, isOrganization, { cursor: cursors[pageIndex], limit: pageRows }),
    placeholderData: keepPreviousData,
  });
  const rows = page.data?.data ?? [];
  const keyNames = new Map((keys.data?.data ?? []).map((key) => [key.uuid, key.name]));

  function onFilter(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setFilters({
      from: field(form, "from"),
      to: field(form, "to"),
      model: field(form, "model"),
      keyId: field(form, "keyId"),
      status: field(form, "status"),
      outcome: field(form, "outcome") as RequestOutcome | undefined,
    });
    setIsOrganization(form.get("scope") === "organization");
    setCursors([undefined]);
  }

  const firstRow = pageIndex * pageRows + 1;
  return (
    <>
      <h1>{t("navActivity")}</h1>
      <p className="muted">{t("activityHelp")}</p>
      <form className="row wrap" onSubmit={onFilter} aria-label={t("filter")}>
        <label>
          {t("from")}
          <input type="date" name="from" defaultValue={filters.from} />
        </label>
        <label>
          {t("to")}
          <input type="date" name="to" defaultValue={filters.to} />
        </label>
        <label>
          {t("scope")}
          <select name="scope" defaultValue="personal">
            <option value="personal">{t("personal")}</option>
            {hasOrganization && <option value="organization">{t("organization")}</option>}
          </select>
        </label>
        <label>
          {t("model")}
          <select name="model" defaultValue="">
            <option value="">{t("anyModel")}</option>
            {models.data?.data.map((model) => (
              <option key={model.id}>{model.id}</option>
            ))}
          </select>
        </label>
        <label>
          {t("key")}
          <select name="keyId" defaultValue="">
            <option value="">{t("anyKey")}</option>
            {keys.data?.data.map((key) => (
              <option key={key.uuid} value={key.uuid}>
                {key.name} ({key.keyPreview})
              </option>
            ))}
          </select>
        </label>
        <label>
          {t("outcome")}
          <select name="outcome" defaultValue="">
            <option value="">{t("anyOutcome")}</option>
            {outcomes.map((outcome) => (
              <option key={outcome} value={outcome}>
                {t(outcomeLabels[outcome])}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t("httpStatus")}
          <input name="status" inputMode="numeric" pattern="[1-5]\d\d" placeholder="429" size={5} />
        </label>
        <button type="submit">{t("apply")}</button>
        <button type="button" onClick={() => void page.refetch()}>
          {t("refresh")}
        </button>
      </form>
      <ErrorMessage error={page.error} />
      {page.data && rows.length === 0 && <p>{t("noActivity")}</p>}
      {rows.length > 0 && (
        <section className="card" aria-label={t("navActivity")}>
          <div className="table-scroll">
            <table data-testid="activity-table">
              <thead>
                <tr>
                  <th scope="col">{t("time")}</th>
                  <th scope="col">{t("model")}</th>
                  <th scope="col">{t("key")}</th>
                  <th scope="col">{t("outcome")}</th>
                  <th scope="col">{t("latency")}</th>
                  <th scope="col">{t("tokens")}</th>
                  <th scope="col">{t("cost")}</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((entry) => (
                  <ActivityRow key={entry.requestId} entry={entry} keyName={keyNames.get(entry.keyId)} />
                ))}
              </tbody>
            </table>
          </div>
          <CursorPager
            label={t("activityPages")}
            cursors={cursors}
            setCursors={setCursors}
            next={page.data?.nextCursor}
            fetching={page.isFetching}
          >
            <span data-testid="activity-position">
              {formatCount(firstRow)}–{formatCount(firstRow + rows.length - 1)}
            </span>
          </CursorPager>
        </section>
      )}
    </>
  );
}

const outcomeBadges: Record<RequestOutcome, string> = {
  served: "badge ok",
  refused: "badge warn",
  failed: "badge bad",
  cut: "badge off",
};

function ActivityRow({ entry, keyName }: { entry: ActivityEntry; keyName: string | undefined }) {
  const { t, language } = useI18n();
  const tokens = entry.tokens;
  return (
    <tr data-testid="activity-row" data-outcome={entry.outcome}>
      <td>
        {formatSeoulDateTime(entry.startedAt, language)}
        <div className="muted">
          <code>{entry.requestId}</code>
        </div>
      </td>
      <td>
        {entry.model ?? "—"}
        <div className="muted">
          {entry.endpoint}
          {entry.streamed ? ` · ${t("streamed")}` : ""}
        </div>
      </td>
      <td>
        {keyName ?? ""} <code>{entry.keyPreview ?? entry.keyId.slice(0, 8)}</code>
      </td>
      <td>
        <span className={outcomeBadges[entry.outcome]}>{t(outcomeLabels[entry.outcome])}</span>{" "}
        <span data-testid="activity-status">{entry.httpStatus}</span>
        {entry.errorType && <div className="muted">{entry.errorType}</div>}
      </td>
      <td className="number">
        {formatCount(entry.latencyMs)} ms
        {entry.timeToFirstTokenMs !== null && (
          <div className="muted">
            {t("firstToken")} {formatCount(entry.timeToFirstTokenMs)} ms
          </div>
        )}
      </td>
      <td className="number">
        {tokens ? `${formatCount(tokens.input)} → ${formatCount(tokens.output)}` : "—"}
        {entry.outputTokensPerSecond !== null && (
          <div className="muted">{formatCount(Math.round(entry.outputTokensPerSecond))} tok/s</div>
        )}
      </td>
      <td className="number" data-testid="activity-cost">
        {entry.costWon === null ? "—" : formatChargeWon(entry.costWon)}
      </td>
    </tr>
  );
}
