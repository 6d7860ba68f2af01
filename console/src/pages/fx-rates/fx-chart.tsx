import { useId } from "react";
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { formatDecimal, formatShortDate } from "../../lib/format";
import type { FxPoint } from "../../lib/fx-series";
import { useI18n } from "../../lib/i18n";

const dayOf = (dayMs: number) => new Date(dayMs).toISOString().slice(0, 10);

/** The rate by day; the svg carries a title and description, and the history table is its text equivalent. */
export function FxChart({ points }: { points: FxPoint[] }) {
  const { t, language } = useI18n();
  const captionId = useId();
  const rates = points.map((point) => point.rate);
  // A little room above and below, so a flat history is a visible line rather than an edge.
  const padding = Math.max(1, (Math.max(...rates) - Math.min(...rates)) * 0.1);
  return (
    <figure className="card chart" data-testid="fx-chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <h2>{t("fxChart")}</h2>
      </figcaption>
      <ResponsiveContainer width="100%" height={260}>
        <LineChart
          data={points}
          margin={{ left: 12, right: 24 }}
          title={t("fxChart")}
          desc={t("fxChartDescription")}
          accessibilityLayer
        >
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis
            dataKey="dayMs"
            type="number"
            scale="time"
            domain={["dataMin", "dataMax"]}
            padding={{ left: 16, right: 16 }}
            tickFormatter={(dayMs: number) => formatShortDate(dayOf(dayMs), language)}
            minTickGap={24}
          />
          <YAxis
            width={80}
            domain={[
              Math.floor((Math.min(...rates) - padding) / 10) * 10,
              Math.ceil((Math.max(...rates) + padding) / 10) * 10,
            ]}
            tickFormatter={(value: number) => formatDecimal(String(value))}
          />
          <Tooltip
            formatter={(_value, _name, item) => [
              `${formatDecimal((item.payload as FxPoint).rateText)} (${(item.payload as FxPoint).source})`,
              "KRW/USD",
            ]}
            labelFormatter={(dayMs) => formatShortDate(dayOf(Number(dayMs)), language)}
          />
          <Line type="stepAfter" dataKey="rate" stroke="#1d4ed8" dot={{ r: 3 }} isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}
