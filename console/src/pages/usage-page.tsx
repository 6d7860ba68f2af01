import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { type FormEvent, useMemo, useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { CursorPager } from "../components/cursor-pager";
import { Card, ErrorMessage } from "../components/ui";
import { type BillingHistoryEntry, type Range, type UsageDay, userApi } from "../lib/api";
import { niceTicks } from "../lib/chart-ticks";
import { chargesCsvHeader, chargesCsvRows } from "../lib/csv";
import {
  addDays,
  formatChargeWon,
  formatCount,
  formatDecimal,
  formatMicroWon,
  formatRate,
  formatSeoulDateTime,
  formatShortDate,
  formatWon,
  microWonOf,
  seoulDateOf,
  sumWon,
  wonOfMicroWon,
} from "../lib/format";
import { useI18n } from "../lib/i18n";
import { type DailySeries, dailySeries } from "../lib/usage-series";

const palette = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];
/** Charges one table page shows; the API allows up to 1,000 and the CSV export reads at that size. */
const chargesPageRows = 50;
const exportPageRows = 1_000;

/**
 * Totals and charts come from the usage-by-day read model (one row per day × model × key, whatever the
 * number of charges); the charges table reads one page at a time, newest first, so a month of 100,000
 * requests is never loaded at once.
 */
export function UsagePage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const today = seoulDateOf(new Date());
  const [range, setRange] = useState({ from: addDays(today, -29), to: today });
  const [isOrganization, setIsOrganization] = useState(false);
  const [groupBy, setGroupBy] = useState<"model" | "key">("model");
  const usage = useQuery({
    queryKey: ["usage", range, isOrganization],
    queryFn: () => userApi.usage(range, isOrganization),
  });
  const keys = useQuery({
    queryKey: ["keys", isOrganization],
    queryFn: () => userApi.keys(isOrganization),
  });
  const keyNames = useMemo(
    () => new Map((keys.data?.data ?? []).map((key) => [key.uuid, `${key.name} (${key.keyPreview})`])),
    [keys.data],
  );
  const keyLabel = (keyId: string) => keyNames.get(keyId) ?? keyId.slice(0, 8);
  const days = usage.data?.data ?? [];
  const groupOf = (day: UsageDay) => (groupBy === "model" ? day.model : keyLabel(day.keyId));
  const won = dailySeries(
    days,
    range,
    groupOf,
    (day) => microWonOf(day.amountWon),
    (micro) => Number(wonOfMicroWon(micro)),
  );
  const tokens = dailySeries(
    days,
    range,
    groupOf,
    (day) => BigInt(day.inputTokens + day.outputTokens),
    (count) => Number(count),
  );
  const totalWon = sumWon(days.map((day) => day.amountWon));
  const totalRequests = days.reduce((sum, day) => sum + day.requests, 0);
  const totalTokens = days.reduce((sum, day) => sum + day.inputTokens + day.outputTokens, 0);

  function onRange(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const from = String(form.get("from"));
    const to = String(form.get("to"));
    if (from && to && from <= to) setRange({ from, to });
  }

  return (
    <>
      <h1>{t("navUsage")}</h1>
      <form className="row wrap" onSubmit={onRange} aria-label={t("filter")}>
        <label>
          {t("from")}
          <input type="date" name="from" defaultValue={range.from} required />
        </label>
        <label>
          {t("to")}
          <input type="date" name="to" defaultValue={range.to} required />
        </label>
        <button type="submit">{t("apply")}</button>
        <label>
          {t("scope")}
          <select
            value={isOrganization ? "organization" : "personal"}
            onChange={(event) => setIsOrganization(event.target.value === "organization")}
          >
            <option value="personal">{t("personal")}</option>
            {hasOrganization && <option value="organization">{t("organization")}</option>}
          </select>
        </label>
        <label>
          {t("groupBy")}
          <select value={groupBy} onChange={(event) => setGroupBy(event.target.value as "model" | "key")}>
            <option value="model">{t("model")}</option>
            <option value="key">{t("key")}</option>
          </select>
        </label>
      </form>
      <ErrorMessage error={usage.error} />
      <div className="grid">
        <Card title={t("total")}>
          <p className="figure" data-testid="usage-total-won">
            {formatChargeWon(totalWon)}
          </p>
          <p className="muted">
            {t("requests")}: <span data-testid="usage-total-requests">{formatCount(totalRequests)}</span> ·{" "}
            {t("tokens")}: {formatCount(totalTokens)}
          </p>
        </Card>
      </div>
      <div className="grid two">
        <UsageChart
          title={t("wonPerDay")}
          series={won}
          testId="chart-won"
          formatValue={(value) => formatWon(String(value))}
          integers={false}
        />
        <UsageChart
          title={t("tokensPerDay")}
          series={tokens}
          testId="chart-tokens"
          formatValue={(value) => formatCount(value)}
          integers
        />
      </div>
      {/* A new range or account starts the table again at its first page. */}
      <ChargesTable
        key={`${range.from}:${range.to}:${isOrganization}`}
        range={range}
        isOrganization={isOrganization}
        chargeCount={usage.data ? totalRequests : null}
        keyLabel={keyLabel}
      />
    </>
  );
}

/** The range's charges a page at a time, newest first: the cursors of the pages before are kept for Previous. */
function ChargesTable(props: {
  range: Range & { from: string; to: string };
  isOrganization: boolean;
  chargeCount: number | null;
  keyLabel(keyId: string): string;
}) {
  const { t, language } = useI18n();
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [exporting, setExporting] = useState(false);
  const [exportError, setExportError] = useState<unknown>(null);
  const pageIndex = cursors.length - 1;
  const page = useQuery({
    queryKey: ["charges", props.range, props.isOrganization, cursors[pageIndex]],
    queryFn: () =>
      userApi.chargesPage(props.range, props.isOrganization, {
        cursor: cursors[pageIndex],
        limit: chargesPageRows,
        order: "newest",
      }),
    // The rows stay while the next page loads, so the table does not jump.
    placeholderData: keepPreviousData,
  });
  const rows = page.data?.data ?? [];
  const firstRow = pageIndex * chargesPageRows + 1;

  /** Every charge of the range, oldest first, read and written a page at a time. */
  async function downloadCsv() {
    setExporting(true);
    setExportError(null);
    try {
      const parts = [chargesCsvHeader()];
      let cursor: string | undefined;
      do {
        const exportPage = await userApi.chargesPage(props.range, props.isOrganization, {
          cursor,
          limit: exportPageRows,
          order: "oldest",
        });
        parts.push(chargesCsvRows(exportPage.data));
        cursor = exportPage.nextCursor ?? undefined;
      } while (cursor !== undefined);
      const blob = new Blob(parts, { type: "text/csv;charset=utf-8" });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      const scope = props.isOrganization ? "organization" : "personal";
      link.download = `charges-${scope}-${props.range.from}-${props.range.to}.csv`;
      link.click();
      URL.revokeObjectURL(link.href);
    } catch (caught) {
      setExportError(caught);
    } finally {
      setExporting(false);
    }
  }

  return (
    <section className="card" aria-labelledby="charges-title">
      <div className="row spread">
        <h2 id="charges-title">{t("charges")}</h2>
        <button type="button" onClick={() => void downloadCsv()} disabled={exporting || rows.length === 0}>
          {exporting ? t("preparingCsv") : t("downloadCsv")}
        </button>
      </div>
      <ErrorMessage error={page.error ?? exportError} />
      {page.data && rows.length === 0 && pageIndex === 0 && <p>{t("noCharges")}</p>}
      {rows.length > 0 && (
        <>
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
                {rows.map((entry) => (
                  <ChargeRow
                    key={entry.requestId}
                    entry={entry}
                    keyLabel={props.keyLabel(entry.keyId)}
                    language={language}
                  />
                ))}
              </tbody>
            </table>
          </div>
          <CursorPager
            label={t("chargesPages")}
            cursors={cursors}
            setCursors={setCursors}
            next={page.data?.nextCursor}
            fetching={page.isFetching}
          >
            <span data-testid="charges-position" aria-live="polite">
              {formatCount(firstRow)}–{formatCount(firstRow + rows.length - 1)}
              {props.chargeCount !== null && ` / ${formatCount(props.chargeCount)}`}
            </span>
          </CursorPager>
        </>
      )}
    </section>
  );
}

function UsageChart(props: {
  title: string;
  series: DailySeries;
  testId: string;
  formatValue: (value: number) => string;
  integers: boolean;
}) {
  const { language } = useI18n();
  // The stacked bars' tallest day sets the axis; its ticks are round steps from zero.
  const tallest = Math.max(
    0,
    ...props.series.rows.map((row) =>
      props.series.groups.reduce((sum, group) => sum + Number(row[group] ?? 0), 0),
    ),
  );
  const axis = niceTicks(tallest, { integers: props.integers });
  return (
    <figure className="card chart" data-testid={props.testId} aria-label={props.title}>
      <figcaption>
        <h2>{props.title}</h2>
      </figcaption>
      <ResponsiveContainer width="100%" height={240}>
        <BarChart data={props.series.rows} margin={{ top: 8, left: 4, right: 12 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis
            dataKey="day"
            tickFormatter={(day: string) => formatShortDate(day, language)}
            minTickGap={16}
          />
          <YAxis
            width={72}
            domain={[0, axis.top]}
            ticks={axis.ticks}
            interval={0}
            tickFormatter={(value: number) => props.formatValue(value)}
          />
          <Tooltip
            formatter={(value) => props.formatValue(Number(value))}
            labelFormatter={(day) => formatShortDate(String(day), language)}
          />
          <Legend />
          {props.series.groups.map((group, index) => (
            <Bar
              key={group}
              dataKey={group}
              stackId="usage"
              fill={palette[index % palette.length]}
              isAnimationActive={false}
            />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </figure>
  );
}

function ChargeRow({
  entry,
  keyLabel,
  language,
}: {
  entry: BillingHistoryEntry;
  keyLabel: string;
  language: "ko" | "en";
}) {
  const { t } = useI18n();
  const b = entry.breakdown;
  return (
    <tr data-testid="charge-row">
      <td>{formatSeoulDateTime(entry.startedAt, language)}</td>
      <td>{entry.model}</td>
      <td>{keyLabel}</td>
      <td>{formatCount(b.tokens.input + b.tokens.output)}</td>
      <td className="number">{formatChargeWon(entry.amountWon)}</td>
      <td>
        <details>
          <summary>{t("details")}</summary>
          <dl className="breakdown">
            <dt>{t("requestId")}</dt>
            <dd>
              <code>{entry.requestId}</code>
            </dd>
            <dt>{t("endpoint")}</dt>
            <dd>{entry.endpoint}</dd>
            <dt>{t("tokens")}</dt>
            <dd>
              {t("inputTokens")} {formatCount(b.tokens.input)} · {t("cachedTokens")}{" "}
              {formatCount(b.tokens.cached)} · {t("outputTokens")} {formatCount(b.tokens.output)} ·{" "}
              {t("reasoningTokens")} {formatCount(b.tokens.reasoning)}
            </dd>
            <dt>{t("unitPrices")}</dt>
            <dd>
              {t("inputPrice")} ${formatDecimal(b.inputUsdPerMillionTokens)} · {t("cachedPrice")} $
              {formatDecimal(b.cachedInputUsdPerMillionTokens)} · {t("outputPrice")} $
              {formatDecimal(b.outputUsdPerMillionTokens)}
            </dd>
            <dt>{t("usd")}</dt>
            <dd>${b.usd}</dd>
            <dt>{t("fxRate")}</dt>
            <dd>
              {formatDecimal(b.fxRateKrwPerUsd)} ({t("rateDate")} {b.fxRateDate})
            </dd>
            <dt>{t("discount")}</dt>
            <dd>{formatRate(b.discountRate)}</dd>
            <dt>{t("exactAmount")}</dt>
            <dd>{formatMicroWon(entry.amountWon)}</dd>
            <dt>{t("source")}</dt>
            <dd>{b.usageSource}</dd>
          </dl>
        </details>
      </td>
    </tr>
  );
}
