import type { WebhookEndpoint } from "../../lib/api";
import { formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { webhookEventLabels } from "./add-webhook-card";

interface EndpointActions {
  /** The endpoint whose delivery log is open, if any. */
  shownLogId: string | null;
  testing: boolean;
  onToggleLog(endpoint: WebhookEndpoint): void;
  onSendTest(endpoint: WebhookEndpoint): void;
  rotating: boolean;
  onRotateSecret(endpoint: WebhookEndpoint): void;
  onDelete(endpoint: WebhookEndpoint): void;
}

export function WebhooksTable({
  endpoints,
  ...actions
}: { endpoints: readonly WebhookEndpoint[] } & EndpointActions) {
  const { t } = useI18n();
  return (
    <div className="table-scroll">
      <table data-testid="webhooks-table">
        <thead>
          <tr>
            <th scope="col">{t("webhookUrl")}</th>
            <th scope="col">{t("webhookEvents")}</th>
            <th scope="col">{t("created")}</th>
            <th scope="col">{t("actions")}</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((endpoint) => (
            <EndpointRow key={endpoint.id} endpoint={endpoint} {...actions} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function EndpointRow({ endpoint, ...actions }: { endpoint: WebhookEndpoint } & EndpointActions) {
  const { t, language } = useI18n();
  const logShown = actions.shownLogId === endpoint.id;
  // Every row has the same buttons: the URL, for assistive technology only, tells them apart.
  const forThisEndpoint = <span className="visually-hidden">{endpoint.url}</span>;
  return (
    <tr data-testid={`webhook-row-${endpoint.url}`}>
      <td className="url-cell">
        <code>{endpoint.url}</code>
      </td>
      <td>
        <ul className="plain-list">
          {endpoint.events.map((type) => (
            <li key={type}>{t(webhookEventLabels[type])}</li>
          ))}
        </ul>
      </td>
      <td>{formatSeoulDateTime(endpoint.createdAt, language)}</td>
      <td>
        <div className="row">
          <button type="button" aria-expanded={logShown} onClick={() => actions.onToggleLog(endpoint)}>
            {logShown ? t("hideDeliveryLog") : t("deliveryLog")} {forThisEndpoint}
          </button>
          <button type="button" disabled={actions.testing} onClick={() => actions.onSendTest(endpoint)}>
            {t("sendTest")} {forThisEndpoint}
          </button>
          <button type="button" disabled={actions.rotating} onClick={() => actions.onRotateSecret(endpoint)}>
            {t("rotateSecret")} {forThisEndpoint}
          </button>
          <button type="button" className="danger" onClick={() => actions.onDelete(endpoint)}>
            {t("delete")} {forThisEndpoint}
          </button>
        </div>
      </td>
    </tr>
  );
}
