import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ErrorMessage } from "../../components/ui";
import { statementApi } from "../../lib/api";
import { useFileDownload } from "../../lib/file-download";
import { seoulDateOf } from "../../lib/format";
import { StatementDocument } from "./statement-document";
import { useStatementWords } from "./statement-i18n";
import "./statement-page.css";

/**
 * The monthly statement of the session's account, as a document: summary, top-ups, charges by model and by
 * key, the signed checkpoint that seals it. Printing (or "save as PDF") gives the document alone on A4.
 */
export function StatementPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { words } = useStatementWords();
  const [account, setAccount] = useState<"personal" | "organization">("personal");
  const [month, setMonth] = useState(seoulDateOf(new Date()).slice(0, 7));
  const statement = useQuery({
    queryKey: ["statement", account, month],
    queryFn: () => statementApi.statement(account, month),
  });
  const csv = useFileDownload();

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
      <form className="row wrap no-print" onSubmit={onShow} aria-label={words.title}>
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
        <button
          type="button"
          disabled={csv.downloading}
          onClick={() => void csv.download(() => statementApi.csv(account, month), `statement-${month}.csv`)}
        >
          {words.downloadCsv}
        </button>
      </form>
      <ErrorMessage error={statement.error ?? csv.error} />
      {statement.data && <StatementDocument statement={statement.data} />}
    </div>
  );
}
