import { useQuery } from "@tanstack/react-query";
import { type Range, type UsageDay, userApi } from "../../lib/api";
import { microWonOf, sumWon, wonOfMicroWon } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { keyLabelOf } from "../../lib/key-label";
import { usageSeries } from "../../lib/usage-series";

export type UsageGrouping = "model" | "key";
export type DateRange = Range & { from: string; to: string };

/**
 * The range's usage by day from the read model: totals, and won and tokens per period (a day, or longer for a
 * long range: lib/usage-series.ts) stacked by group.
 */
export function useUsageSummary(range: DateRange, isOrganization: boolean, groupBy: UsageGrouping) {
  const usage = useQuery({
    queryKey: ["usage", range, isOrganization],
    queryFn: () => userApi.usage(range, isOrganization),
  });
  const { language } = useI18n();
  const days = usage.data?.data ?? [];
  const groupOf = (day: UsageDay) =>
    groupBy === "model" ? day.model : keyLabelOf(day.keyId, day.keyName, language);
  const won = usageSeries(
    days,
    range,
    groupOf,
    (day) => microWonOf(day.amountWon),
    (micro) => Number(wonOfMicroWon(micro)),
  );
  const tokens = usageSeries(
    days,
    range,
    groupOf,
    (day) => BigInt(day.inputTokens + day.outputTokens),
    (count) => Number(count),
  );
  const totals = {
    won: sumWon(days.map((day) => day.amountWon)),
    requests: days.reduce((sum, day) => sum + day.requests, 0),
    tokens: days.reduce((sum, day) => sum + day.inputTokens + day.outputTokens, 0),
  };
  return { usage, won, tokens, totals };
}
