import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
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
      <ChartLegend groups={props.series.groups} />
    </figure>
  );
}

/**
 * The groups' colours under the plot, not inside its fixed height: many keys or long names wrap onto more
 * lines of the legend instead of squeezing the bars out. A long name is cut short; its whole text is the
 * item's title (and what a screen reader reads).
 */
function ChartLegend({ groups }: { groups: readonly string[] }) {
  return (
    <ul className="chart-legend">
      {groups.map((group, index) => (
        <li key={group} title={group}>
          <span
            className="swatch"
            style={{ background: palette[index % palette.length] }}
            aria-hidden="true"
          />
          <span className="chart-legend-name">{group}</span>
        </li>
      ))}
    </ul>
  );
}
