import type { MonthlyStatementView } from "../../lib/api";
import { formatMicroWon, formatSeoulDateTime } from "../../lib/format";
import { systemText } from "../../lib/system-text";
import { type StatementMessageKey, useStatementWords } from "./statement-i18n";

/** Whose statement, which month, whether final, and the balance from opening to closing. */
export function StatementSummary({ statement }: { statement: MonthlyStatementView }) {
  const { word, language } = useStatementWords();
  const summary: [StatementMessageKey, string][] = [
    ["openingBalance", statement.openingBalanceWon],
    ["topUps", statement.topUpsWon],
    ["charges", statement.chargesWon],
    ["corrections", statement.correctionsWon],
    ["closingBalance", statement.closingBalanceWon],
  ];
  return (
    <section className="card summary" aria-label={word("summary")}>
      <h2>
        {statement.account.kind === "user" ? word("personal") : word("organization")} · {statement.account.id}{" "}
        · {statement.month}{" "}
        <span
          className={`badge${statement.provisional ? " provisional" : ""}`}
          data-testid="statement-status"
        >
          {statement.provisional ? word("provisional") : word("final")}
        </span>
      </h2>
      <p className="muted">
        {word("period")}: {formatSeoulDateTime(statement.from, language)} –{" "}
        {formatSeoulDateTime(statement.to, language)}
      </p>
      <table>
        <tbody>
          {summary.map(([key, amount]) => (
            <tr key={key}>
              <th scope="row">{word(key)}</th>
              <td className="amount" data-testid={`statement-${key}`}>
                {formatMicroWon(amount)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="identity">{word("identity")}</p>
    </section>
  );
}

export function StatementTopUps({ topUps }: { topUps: MonthlyStatementView["topUps"] }) {
  const { word, language } = useStatementWords();
  return (
    <section className="card" aria-label={word("topUpLines")}>
      <h2>{word("topUpLines")}</h2>
      <table data-testid="statement-top-ups">
        <thead>
          <tr>
            <th scope="col">{word("date")}</th>
            <th scope="col">{word("reference")}</th>
            <th scope="col" className="amount">
              {word("amount")}
            </th>
          </tr>
        </thead>
        <tbody>
          {topUps.length === 0 && (
            <tr>
              <td colSpan={3}>{word("none")}</td>
            </tr>
          )}
          {topUps.map((topUp) => (
            <tr key={topUp.eventId}>
              <td>{formatSeoulDateTime(topUp.occurredAt, language)}</td>
              <td>{systemText(topUp.reference, language)}</td>
              <td className="amount">{formatMicroWon(topUp.amountWon)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** The signed checkpoint that seals the month, once one covers its last event. */
export function StatementCheckpoint(props: {
  checkpoint: MonthlyStatementView["checkpoint"];
  generatedAt: string;
}) {
  const { word, language } = useStatementWords();
  const { checkpoint } = props;
  return (
    <section className="card" aria-label={word("checkpoint")}>
      <h2>{word("checkpoint")}</h2>
      {checkpoint === null ? (
        <p data-testid="statement-not-sealed">{word("notSealed")}</p>
      ) : (
        <table data-testid="statement-checkpoint">
          <tbody>
            <tr>
              <th scope="row">{word("checkpointSequence")}</th>
              <td>#{checkpoint.sequence}</td>
            </tr>
            <tr>
              <th scope="row">{word("sealedAt")}</th>
              <td>{formatSeoulDateTime(checkpoint.sealedAt, language)}</td>
            </tr>
            <tr>
              <th scope="row">{word("checkpointHash")}</th>
              <td className="hash">{checkpoint.checkpointHash}</td>
            </tr>
          </tbody>
        </table>
      )}
      <p className="muted">
        {word("generatedAt")}: {formatSeoulDateTime(props.generatedAt, language)}
      </p>
    </section>
  );
}
