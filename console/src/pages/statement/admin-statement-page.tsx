import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ErrorMessage } from "../../components/ui";
import { statementApi } from "../../lib/api";
import { useFileDownload } from "../../lib/file-download";
import { seoulDateOf } from "../../lib/format";
import { StatementDocument } from "./statement-document";
import { useStatementWords } from "./statement-i18n";
import "./statement-page.css";

type ChosenStatement = { kind: "user" | "organization"; id: string; month: string };

/** Finance's view: any account's statement, the same document. */
export function AdminStatementPage() {
  const { words } = useStatementWords();
  const [chosen, setChosen] = useState<ChosenStatement>({
    kind: "user",
    id: "",
    month: seoulDateOf(new Date()).slice(0, 7),
  });
  const statement = useQuery({
    queryKey: ["admin", "statement", chosen],
    queryFn: () => statementApi.ofAccount(chosen.kind, chosen.id, chosen.month),
    enabled: chosen.id !== "",
  });
  const csv = useFileDownload();

  return (
    <div className="statement-document">
      <h1>{words.title}</h1>
      <AdminStatementForm
        chosen={chosen}
        onShow={setChosen}
        downloading={csv.downloading}
        onDownload={() =>
          void csv.download(
            () => statementApi.accountCsv(chosen.kind, chosen.id, chosen.month),
            `statement-${chosen.kind}-${chosen.month}.csv`,
          )
        }
      />
      <ErrorMessage error={statement.error ?? csv.error} />
      {statement.data && <StatementDocument statement={statement.data} />}
    </div>
  );
}

/** Which account and month; a month typed wrong keeps the one shown. The CSV needs an account. */
function AdminStatementForm(props: {
  chosen: ChosenStatement;
  onShow(chosen: ChosenStatement): void;
  downloading: boolean;
  onDownload(): void;
}) {
  const { words } = useStatementWords();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const month = String(form.get("month"));
    props.onShow({
      kind: form.get("kind") === "organization" ? "organization" : "user",
      id: String(form.get("id") ?? "").trim(),
      month: /^\d{4}-\d{2}$/.test(month) ? month : props.chosen.month,
    });
  }
  return (
    <form className="row wrap no-print" onSubmit={onSubmit} aria-label={words.title}>
      <label>
        {words.account}
        <select name="kind" defaultValue={props.chosen.kind}>
          <option value="user">{words.personal}</option>
          <option value="organization">{words.organization}</option>
        </select>
      </label>
      <label>
        {words.accountId}
        <input name="id" defaultValue={props.chosen.id} required />
      </label>
      <label>
        {words.month}
        <input name="month" type="month" defaultValue={props.chosen.month} required />
      </label>
      <button type="submit">{words.show}</button>
      <button type="button" className="primary" onClick={() => window.print()}>
        {words.print}
      </button>
      {props.chosen.id !== "" && (
        <button type="button" disabled={props.downloading} onClick={props.onDownload}>
          {words.downloadCsv}
        </button>
      )}
    </form>
  );
}
