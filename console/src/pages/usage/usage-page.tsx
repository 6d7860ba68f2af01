import { useState } from "react";
import { ErrorMessage } from "../../components/ui";
import { addDays, formatCount, formatWon, seoulDateOf } from "../../lib/format";
import { type MessageKey, useI18n } from "../../lib/i18n";
import type { UsagePeriod } from "../../lib/usage-series";
import { OwnKeysOnlyNote } from "../members/own-keys-only-note";
import { ChargesTable } from "./charges-table";
import { UsageChart } from "./usage-chart";
import { UsageFilterForm } from "./usage-filter-form";
import { UsageTotalCard } from "./usage-total-card";
import { type UsageGrouping, useUsageSummary } from "./use-usage-summary";

/** A long range is charted in weeks, months or years: the chart's title says which. */
const wonTitles: Record<UsagePeriod, MessageKey> = {
  day: "wonPerDay",
  week: "wonPerWeek",
  month: "wonPerMonth",
  year: "wonPerYear",
};
const tokenTitles: Record<UsagePeriod, MessageKey> = {
  day: "tokensPerDay",
  week: "tokensPerWeek",
  month: "tokensPerMonth",
  year: "tokensPerYear",
};

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
  const [groupBy, setGroupBy] = useState<UsageGrouping>("model");
  const summary = useUsageSummary(range, isOrganization, groupBy);
  return (
    <>
      <h1>{t("navUsage")}</h1>
      <UsageFilterForm
        range={range}
        isOrganization={isOrganization}
        hasOrganization={hasOrganization}
        groupBy={groupBy}
        onRange={setRange}
        onScope={setIsOrganization}
        onGroupBy={setGroupBy}
      />
      <OwnKeysOnlyNote hasOrganization={hasOrganization} isOrganization={isOrganization} />
      <ErrorMessage error={summary.usage.error} />
      <UsageTotalCard totals={summary.totals} />
      <div className="grid two">
        <UsageChart
          title={t(wonTitles[summary.won.period])}
          series={summary.won}
          testId="chart-won"
          formatValue={(value) => formatWon(String(value))}
          integers={false}
        />
        <UsageChart
          title={t(tokenTitles[summary.tokens.period])}
          series={summary.tokens}
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
        chargeCount={summary.usage.data ? summary.totals.requests : null}
      />
    </>
  );
}
