import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useMemo, useState } from "react";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { Card, ErrorMessage } from "../components/ui";
import { type BillingHistoryEntry, type UsageDay, userApi } from "../lib/api";
import { chargesCsv } from "../lib/csv";
import {
  addDays,
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

export function UsagePage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t, language } = useI18n();
  const today = seoulDateOf(new Date());
  const [range, setRange] = useState({ from: addDays(today, -29), to: today });
  const [isOrganization, setIsOrganization] = useState(false);
  const [groupBy, setGroupBy] = useState<"model" | "key">("model");
  const usage = useQuery({
    queryKey: ["usage", range, isOrganization],
    queryFn: () => userApi.usage(range, isOrganization),
  });
  const billing = useQuery({
    queryKey: ["billing", range, isOrganization],
    queryFn: () => userApi.billing(range, isOrganization, (date) => addDays(date, 1)),
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

  function downloadCsv() {
    const blob = new Blob([chargesCsv(billing.data?.data ?? [])], { type: "text/csv;charset=utf-8" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = `charges-${isOrganization ? "organization" : "personal"}-${range.from}-${range.to}.csv`;
    link.click();
    URL.revokeObjectURL(link.href);
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
      <ErrorMessage error={usage.error ?? billing.error} />
      <div className="grid">
        <Card title={t("total")}>
          <p className="figure" data-testid="usage-total-won">
            {formatWon(totalWon)}
          </p>
          <p className="muted">
            {t("requests")}: {formatCount(totalRequests)} · {t("tokens")}: {formatCount(totalTokens)}
          </p>
        </Card>
      </div>
      <div className="grid two">
        <UsageChart
          title={t("wonPerDay")}
          series={won}
          testId="chart-won"
          formatValue={(v) => formatWon(String(v))}
        />
        <UsageChart
          title={t("tokensPerDay")}
          series={tokens}
          testId="chart-tokens"
          formatValue={(v) => formatCount(v)}
        />
      </div>

      <section className="card" aria-labelledby="charges-title">
        <div className="row spread">
          <h2 id="charges-title">{t("charges")}</h2>
          <button type="button" onClick={downloadCsv} disabled={!billing.data?.data.length}>
            {t("downloadCsv")}
          </button>
        </div>
        {billing.data && billing.data.data.length === 0 && <p>{t("noCharges")}</p>}
        {billing.data && billing.data.data.length > 0 && (
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
              {[...billing.data.data].reverse().map((entry) => (
                <ChargeRow
                  key={entry.requestId}
                  entry={entry}
                  keyLabel={keyLabel(entry.keyId)}
                  language={language}
                />
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

function UsageChart(props: {
  title: string;
  series: DailySeries;
  testId: string;
  formatValue: (value: number) => string;
}) {
  const { language } = useI18n();
  return (
    <figure className="card chart" data-testid={props.testId} aria-label={props.title}>
      <figcaption>
        <h2>{props.title}</h2>
      </figcaption>
      <ResponsiveContainer width="100%" height={240}>
        <BarChart data={props.series.rows} margin={{ left: 12, right: 12 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis
            dataKey="day"
            tickFormatter={(day: string) => formatShortDate(day, language)}
            minTickGap={16}
          />
          <YAxis width={80} tickFormatter={(value: number) => props.formatValue(value)} />
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
      <td>{formatMicroWon(entry.amountWon)}</td>
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
            <dt>{t("amount")}</dt>
            <dd>{formatMicroWon(entry.amountWon)}</dd>
            <dt>{t("source")}</dt>
            <dd>{b.usageSource}</dd>
          </dl>
        </details>
      </td>
    </tr>
  );
}
