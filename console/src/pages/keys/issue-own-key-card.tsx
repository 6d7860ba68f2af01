import { type FormEvent, useEffect, useRef } from "react";
import { CopyableCode } from "../../components/copy-button";
import { KeyNameFields } from "../../components/key-name-fields";
import { Card, ErrorMessage } from "../../components/ui";
import type { NewApiKey } from "../../lib/api";
import { resetWhenAccepted } from "../../lib/form-fields";
import { useI18n } from "../../lib/i18n";
import { useOneSubmissionAtATime } from "../../lib/one-submission-at-a-time";

/** Issues a key of the session's account (or its organization's, as the page's scope says). */
export function IssueOwnKeyCard(props: {
  issuing: boolean;
  error: unknown;
  onIssue(fields: { name: string; description: string }): Promise<unknown>;
}) {
  const { t } = useI18n();
  const submitOnce = useOneSubmissionAtATime();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const fields = new FormData(form);
    submitOnce(() => {
      // Unlike the other forms, the name and description are sent as typed, spaces included.
      const sent = props.onIssue({
        name: String(fields.get("name") ?? ""),
        description: String(fields.get("description") ?? ""),
      });
      resetWhenAccepted(form, sent);
      return sent;
    });
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
  // Issue is disabled while the key is made, so focus has left it: it lands on the secret's card.
  const title = useRef<HTMLHeadingElement>(null);
  useEffect(() => title.current?.focus(), []);
  return (
    <section className="card new-key" aria-labelledby="new-key-title">
      <h2 id="new-key-title" ref={title} tabIndex={-1}>
        {t("newKeyTitle")}
      </h2>
      <p role="alert" className="warning">
        {t("newKeyWarning")}
      </p>
      <div className="row wrap">
        <CopyableCode text={issued.key} testId="new-key-value" />
        <button type="button" onClick={onDone}>
          {t("done")}
        </button>
      </div>
    </section>
  );
}
