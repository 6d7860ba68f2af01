import type { ActivityEntry } from "../../lib/api";
import { formatChargeWon, formatCount, formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { systemText } from "../../lib/system-text";
import { outcomeBadges, outcomeLabels } from "./request-outcomes";

/** One page of the log; a key is named when it is one of the account's keys still listed. */
export function ActivityTable(props: {
  rows: readonly ActivityEntry[];
  keyNames: ReadonlyMap<string, string>;
}) {
  const { t } = useI18n();
  return (
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
          {props.rows.map((entry) => (
            <ActivityRow key={entry.requestId} entry={entry} keyName={props.keyNames.get(entry.keyId)} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

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
        {/* A fallback answered: the model requested, then the one charged (as GET /llm/billing names it). */}
        <span data-testid="activity-model">
          {entry.model ?? "—"}
          {entry.answeredBy === null ? "" : ` → ${entry.answeredBy}`}
        </span>
        <div className="muted">
          {entry.endpoint}
          {entry.streamed ? ` · ${t("streamed")}` : ""}
          {entry.answeredBy === null ? "" : ` · ${t("answeredByFallback")}`}
        </div>
      </td>
      <td>
        {keyName === undefined ? "" : systemText(keyName, language)}{" "}
        <code>{entry.keyPreview ?? entry.keyId.slice(0, 8)}</code>
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
