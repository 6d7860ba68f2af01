import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { niceTicks } from "../../lib/chart-ticks";
import { formatPeriodStart } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import type { UsageSeries } from "../../lib/usage-series";

const palette = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"];

/** A value per period (a day, a week, …) as bars stacked by group (model or key), one colour per group. */
export function UsageChart(props: {
  title: string;
  series: UsageSeries;
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
            dataKey="start"
            tickFormatter={(start: string) => formatPeriodStart(start, props.series.period, language)}
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
            labelFormatter={(start) => formatPeriodStart(String(start), props.series.period, language)}
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
