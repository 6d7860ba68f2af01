import { type FormEvent, useState } from "react";
import { KeyNameFields } from "../../components/key-name-fields";
import { Card, ErrorMessage } from "../../components/ui";
import type { NewApiKey } from "../../lib/api";
import { useI18n } from "../../lib/i18n";

/** Issues a key of the session's account (or its organization's, as the page's scope says). */
export function IssueOwnKeyCard(props: {
  issuing: boolean;
  error: unknown;
  onIssue(fields: { name: string; description: string }): void;
}) {
  const { t } = useI18n();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    // Unlike the other forms, the name and description are sent as typed, spaces included.
    props.onIssue({
      name: String(form.get("name") ?? ""),
      description: String(form.get("description") ?? ""),
    });
    event.currentTarget.reset();
  }
  return (
    <Card title={t("issueKey")}>
      <form onSubmit={onSubmit} className="row wrap">
        <KeyNameFields />
        <button type="submit" className="primary" disabled={props.issuing}>
          {t("issue")}
        </button>
      </form>
      <ErrorMessage error={props.error} />
    </Card>
  );
}

/** The new key's secret, shown this once with a copy button: the server keeps only its hash. */
export function NewKeyCard({ issued, onDone }: { issued: NewApiKey; onDone(): void }) {
  const { t } = useI18n();
  const [copied, setCopied] = useState(false);
  async function copy() {
    await navigator.clipboard.writeText(issued.key);
    setCopied(true);
  }
  return (
    <section className="card new-key" aria-labelledby="new-key-title">
      <h2 id="new-key-title">{t("newKeyTitle")}</h2>
      <p role="alert" className="warning">
        {t("newKeyWarning")}
      </p>
      <div className="row">
        <code data-testid="new-key-value">{issued.key}</code>
        <button type="button" onClick={() => void copy()}>
          {copied ? t("copied") : t("copy")}
        </button>
        <button type="button" onClick={onDone}>
          {t("done")}
        </button>
      </div>
    </section>
  );
}
