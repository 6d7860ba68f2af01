import { type FormEvent, useRef, useState } from "react";
import { CopyButton } from "../../components/copy-button";
import { Card, ErrorMessage } from "../../components/ui";
import type { WebhookEventType } from "../../lib/api";
import { fieldText, resetWhenAccepted } from "../../lib/form-fields";
import { type MessageKey, useI18n } from "../../lib/i18n";
import { inputLengthsMax } from "../../lib/input-bounds";
import { useOneSubmissionAtATime } from "../../lib/one-submission-at-a-time";
import type { ShownSecret } from "./use-webhooks";

/** A label for every event an endpoint may ask for: a Record, so a new event type is a compile error here. */
export const webhookEventLabels: Record<WebhookEventType, MessageKey> = {
  "balance.low": "eventBalanceLow",
  "key.limit_reached": "eventKeyLimitReached",
  "statement.closed": "eventStatementClosed",
};
const webhookEvents = Object.keys(webhookEventLabels) as WebhookEventType[];

export function AddWebhookCard(props: {
  adding: boolean;
  error: unknown;
  onAdd(endpoint: { url: string; events: WebhookEventType[] }): Promise<unknown>;
  /** The form changed: the last refusal no longer describes it. */
  onEdit(): void;
}) {
  const { t } = useI18n();
  const [noEvent, setNoEvent] = useState(false);
  const submitOnce = useOneSubmissionAtATime();
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const fields = new FormData(form);
    const events = webhookEvents.filter((type) => fields.getAll("events").includes(type));
    submitOnce(() => {
      // The server refuses an empty list too; said here, next to the boxes, before a round trip.
      setNoEvent(events.length === 0);
      if (events.length === 0) return undefined;
      const sent = props.onAdd({ url: fieldText(fields, "url"), events });
      resetWhenAccepted(form, sent);
      return sent;
    });
  }
  return (
    <Card title={t("addWebhookTitle")}>
      <form className="stack" onSubmit={submit} onChange={props.onEdit}>
        <label>
          {t("webhookUrl")}
          <input
            name="url"
            type="url"
            required
            maxLength={inputLengthsMax.webhookUrl}
            placeholder="https://"
          />
        </label>
        <fieldset className="event-choice">
          <legend>{t("webhookEvents")}</legend>
          {webhookEvents.map((type) => (
            <label key={type} className="check">
              <input type="checkbox" name="events" value={type} />
              {t(webhookEventLabels[type])}
            </label>
          ))}
          {noEvent && (
            <p role="alert" className="field-error">
              {t("webhookEventsRequired")}
            </p>
          )}
        </fieldset>
        <div>
          <button type="submit" className="primary" disabled={props.adding}>
            {t("addWebhook")}
          </button>
        </div>
      </form>
      <ErrorMessage error={props.error} />
    </Card>
  );
}

/**
 * The signing secret, a new endpoint's or a rotation's, shown this once in a field that selects and copies
 * whole: the server shows it no more.
 */
export function WebhookSecretCard({ shown, onDone }: { shown: ShownSecret; onDone(): void }) {
  const { t } = useI18n();
  const secretField = useRef<HTMLInputElement>(null);
  return (
    <section className="card new-key" aria-labelledby="webhook-secret-title">
      <h2 id="webhook-secret-title">
        {t(shown.rotated ? "webhookRotatedSecretTitle" : "webhookSecretTitle")}
      </h2>
      <p className="muted">{shown.url}</p>
      <p role="alert" className="warning">
        {t("webhookSecretWarning")}
        {shown.rotated && <> {t("webhookRotatedSecretNote")}</>}
      </p>
      <div className="row wrap">
        <label className="secret-field">
          {t("webhookSecretLabel")}
          <input
            ref={secretField}
            readOnly
            value={shown.secret}
            data-testid="webhook-secret"
            onFocus={(event) => event.currentTarget.select()}
          />
        </label>
        <CopyButton text={shown.secret} target={secretField} />
        <button type="button" onClick={onDone}>
          {t("done")}
        </button>
      </div>
    </section>
  );
}
