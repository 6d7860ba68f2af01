import { useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { type Range, type UsageDay, userApi } from "../../lib/api";
import { microWonOf, sumWon, wonOfMicroWon } from "../../lib/format";
import { dailySeries } from "../../lib/usage-series";

export type UsageGrouping = "model" | "key";
export type DateRange = Range & { from: string; to: string };

/** Names a key as "name (preview)" while the account still lists it, else by the start of its id. */
function useKeyLabel(isOrganization: boolean) {
  const keys = useQuery({
    queryKey: ["keys", isOrganization],
    queryFn: () => userApi.keys(isOrganization),
  });
  const keyNames = useMemo(
    () => new Map((keys.data?.data ?? []).map((key) => [key.uuid, `${key.name} (${key.keyPreview})`])),
    [keys.data],
  );
  return (keyId: string) => keyNames.get(keyId) ?? keyId.slice(0, 8);
}

/** The range's usage by day from the read model: totals, and won and tokens per day stacked by group. */
export function useUsageSummary(range: DateRange, isOrganization: boolean, groupBy: UsageGrouping) {
  const usage = useQuery({
    queryKey: ["usage", range, isOrganization],
    queryFn: () => userApi.usage(range, isOrganization),
  });
  const keyLabel = useKeyLabel(isOrganization);
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
  const totals = {
    won: sumWon(days.map((day) => day.amountWon)),
    requests: days.reduce((sum, day) => sum + day.requests, 0),
    tokens: days.reduce((sum, day) => sum + day.inputTokens + day.outputTokens, 0),
  };
  return { usage, keyLabel, won, tokens, totals };
}
