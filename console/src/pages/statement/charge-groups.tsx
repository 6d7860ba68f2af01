import { formatCount, formatMicroWon } from "../../lib/format";
import { useStatementWords } from "./statement-i18n";

/** Charges grouped by model or by key, with the month's total as the last row. */
export function ChargeGroups(props: {
  title: string;
  label: string;
  testId: string;
  /** `id` is shown under the name when there is one (a key's uuid under its name). */
  rows: { name: string; id?: string; requests: number; amountWon: string }[];
  total: string;
  totalRequests: number;
}) {
  const { words } = useStatementWords();
  return (
    <section className="card" aria-label={props.title}>
      <h2>{props.title}</h2>
      <table data-testid={props.testId}>
        <thead>
          <tr>
            <th scope="col">{props.label}</th>
            <th scope="col" className="amount">
              {words.requests}
            </th>
            <th scope="col" className="amount">
              {words.amount}
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={row.id ?? row.name}>
              <td>
                {row.id === undefined ? (
                  <span className="hash">{row.name}</span>
                ) : (
                  <>
                    {row.name}
                    <div className="hash">{row.id}</div>
                  </>
                )}
              </td>
              <td className="amount">{formatCount(row.requests)}</td>
              <td className="amount">{formatMicroWon(row.amountWon)}</td>
            </tr>
          ))}
          <tr>
            <th scope="row">{words.total}</th>
            <td className="amount">{formatCount(props.totalRequests)}</td>
            <td className="amount">{formatMicroWon(props.total)}</td>
          </tr>
        </tbody>
      </table>
    </section>
  );
}
