import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ErrorMessage } from "../components/ui";
import { type MonthlyStatementView, statementApi } from "../lib/api";
import { formatCount, formatMicroWon, formatSeoulDateTime, seoulDateOf } from "../lib/format";
import { useI18n } from "../lib/i18n";
import { type StatementMessageKey, statementMessages } from "./statement-i18n";
import "./statement-page.css";

/**
 * The monthly statement of the session's account, as a document: summary, top-ups, charges by model and by
 * key, the signed checkpoint that seals it. Printing (or "save as PDF") gives the document alone on A4.
 */
export function StatementPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { language } = useI18n();
  const words = statementMessages[language];
  const [account, setAccount] = useState<"personal" | "organization">("personal");
  const [month, setMonth] = useState(seoulDateOf(new Date()).slice(0, 7));
  const statement = useQuery({
    queryKey: ["statement", account, month],
    queryFn: () => statementApi.statement(account, month),
  });

  function onShow(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const chosenMonth = String(form.get("month"));
    if (/^\d{4}-\d{2}$/.test(chosenMonth)) setMonth(chosenMonth);
    setAccount(form.get("account") === "organization" ? "organization" : "personal");
  }

  return (
    <div className="statement-document">
      <h1>{words.title}</h1>
      <form className="row no-print" onSubmit={onShow} aria-label={words.title}>
        <label>
          {words.account}
          <select name="account" defaultValue={account}>
            <option value="personal">{words.personal}</option>
            {hasOrganization && <option value="organization">{words.organization}</option>}
          </select>
        </label>
        <label>
          {words.month}
          <input name="month" type="month" defaultValue={month} required />
        </label>
        <button type="submit">{words.show}</button>
        <button type="button" className="primary" onClick={() => window.print()}>
          {words.print}
        </button>
        <a href={statementApi.csvPath(account, month)} download>
          {words.downloadCsv}
        </a>
      </form>
      <ErrorMessage error={statement.error} />
      {statement.data && <StatementDocument statement={statement.data} />}
    </div>
  );
}

/** Finance's view: any account's statement, the same document. */
export function AdminStatementPage() {
  const { language } = useI18n();
  const words = statementMessages[language];
  const [chosen, setChosen] = useState<{ kind: "user" | "organization"; id: string; month: string }>({
    kind: "user",
    id: "",
    month: seoulDateOf(new Date()).slice(0, 7),
  });
  const statement = useQuery({
    queryKey: ["admin", "statement", chosen],
    queryFn: () => statementApi.ofAccount(chosen.kind, chosen.id, chosen.month),
    enabled: chosen.id !== "",
  });

  function onShow(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const month = String(form.get("month"));
    setChosen({
      kind: form.get("kind") === "organization" ? "organization" : "user",
      id: String(form.get("id") ?? "").trim(),
      month: /^\d{4}-\d{2}$/.test(month) ? month : chosen.month,
    });
  }

  return (
    <div className="statement-document">
      <h1>{words.title}</h1>
      <form className="row no-print" onSubmit={onShow} aria-label={words.title}>
        <label>
          {words.account}
          <select name="kind" defaultValue={chosen.kind}>
            <option value="user">{words.personal}</option>
            <option value="organization">{words.organization}</option>
          </select>
        </label>
        <label>
          {words.accountId}
          <input name="id" defaultValue={chosen.id} required />
        </label>
        <label>
          {words.month}
          <input name="month" type="month" defaultValue={chosen.month} required />
        </label>
        <button type="submit">{words.show}</button>
        <button type="button" className="primary" onClick={() => window.print()}>
          {words.print}
        </button>
        {chosen.id !== "" && (
          <a href={statementApi.accountCsvPath(chosen.kind, chosen.id, chosen.month)} download>
            {words.downloadCsv}
          </a>
        )}
      </form>
      <ErrorMessage error={statement.error} />
      {statement.data && <StatementDocument statement={statement.data} />}
    </div>
  );
}

function StatementDocument({ statement }: { statement: MonthlyStatementView }) {
  const { language } = useI18n();
  const words = statementMessages[language];
  const word = (key: StatementMessageKey) => words[key];
  const summary: [StatementMessageKey, string][] = [
    ["openingBalance", statement.openingBalanceWon],
    ["topUps", statement.topUpsWon],
    ["charges", statement.chargesWon],
    ["corrections", statement.correctionsWon],
    ["closingBalance", statement.closingBalanceWon],
  ];
  return (
    <article aria-label={word("title")} data-testid="statement">
      <section className="card summary" aria-label={word("summary")}>
        <h2>
          {statement.account.kind === "user" ? word("personal") : word("organization")} ·{" "}
          {statement.account.id} · {statement.month}{" "}
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
            {statement.topUps.length === 0 && (
              <tr>
                <td colSpan={3}>{word("none")}</td>
              </tr>
            )}
            {statement.topUps.map((topUp) => (
              <tr key={topUp.eventId}>
                <td>{formatSeoulDateTime(topUp.occurredAt, language)}</td>
                <td>{topUp.reference}</td>
                <td className="amount">{formatMicroWon(topUp.amountWon)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <ChargeGroups
        title={word("byModel")}
        label={word("model")}
        testId="statement-by-model"
        rows={statement.chargesByModel.map((group) => ({ ...group, name: group.model }))}
        total={statement.chargesWon}
        totalRequests={statement.chargeCount}
      />
      <ChargeGroups
        title={word("byKey")}
        label={word("key")}
        testId="statement-by-key"
        rows={statement.chargesByKey.map((group) => ({ ...group, name: group.keyId }))}
        total={statement.chargesWon}
        totalRequests={statement.chargeCount}
      />
      <section className="card" aria-label={word("checkpoint")}>
        <h2>{word("checkpoint")}</h2>
        {statement.checkpoint === null ? (
          <p data-testid="statement-not-sealed">{word("notSealed")}</p>
        ) : (
          <table data-testid="statement-checkpoint">
            <tbody>
              <tr>
                <th scope="row">{word("checkpointSequence")}</th>
                <td>#{statement.checkpoint.sequence}</td>
              </tr>
              <tr>
                <th scope="row">{word("sealedAt")}</th>
                <td>{formatSeoulDateTime(statement.checkpoint.sealedAt, language)}</td>
              </tr>
              <tr>
                <th scope="row">{word("checkpointHash")}</th>
                <td className="hash">{statement.checkpoint.checkpointHash}</td>
              </tr>
            </tbody>
          </table>
        )}
        <p className="muted">
          {word("generatedAt")}: {formatSeoulDateTime(statement.generatedAt, language)}
        </p>
      </section>
    </article>
  );
}

function ChargeGroups(props: {
  title: string;
  label: string;
  testId: string;
  rows: { name: string; requests: number; amountWon: string }[];
  total: string;
  totalRequests: number;
}) {
  const { language } = useI18n();
  const words = statementMessages[language];
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
            <tr key={row.name}>
              <td className="hash">{row.name}</td>
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
