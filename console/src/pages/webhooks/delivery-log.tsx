import { ErrorMessage } from "../../components/ui";
import type { WebhookDelivery, WebhookEndpoint } from "../../lib/api";
import { formatSeoulDateTime } from "../../lib/format";
import { type MessageKey, useI18n } from "../../lib/i18n";
import { useWebhookDeliveries } from "./use-webhooks";

const statusLabels: Record<string, { label: MessageKey; badge: string }> = {
  pending: { label: "deliveryPending", badge: "warn" },
  delivered: { label: "deliveryDelivered", badge: "ok" },
  failed: { label: "deliveryFailed", badge: "bad" },
  cancelled: { label: "deliveryCancelled", badge: "off" },
};

/** An endpoint's deliveries, newest first (the server's last 100), read again while any is pending. */
export function DeliveryLog({ endpoint }: { endpoint: WebhookEndpoint }) {
  const { t } = useI18n();
  const deliveries = useWebhookDeliveries(endpoint.id);
  const rows = deliveries.data?.data;
  return (
    <section className="card" aria-labelledby="delivery-log-title">
      <h2 id="delivery-log-title">{t("deliveryLog")}</h2>
      <p className="muted url-cell">
        {t("deliveriesOf")} <code>{endpoint.url}</code>
      </p>
      <ErrorMessage error={deliveries.error} />
      {rows && rows.length === 0 && <p>{t("noDeliveries")}</p>}
      {rows && rows.length > 0 && (
        // Focusable: the log has no control inside, and a phone's keyboard user must still scroll it sideways
        // (axe's scrollable-region-focusable); a labelled region, so the stop is announced as the log.
        // biome-ignore lint/a11y/noNoninteractiveTabindex: see above
        <section className="table-scroll" aria-labelledby="delivery-log-title" tabIndex={0}>
          <table data-testid="delivery-log">
            <thead>
              <tr>
                <th scope="col">{t("deliveryType")}</th>
                <th scope="col">{t("status")}</th>
                <th scope="col">{t("deliveryAttempts")}</th>
                <th scope="col">{t("created")}</th>
                <th scope="col">{t("deliveryNextTry")}</th>
                <th scope="col">{t("deliveryLastAnswer")}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((delivery) => (
                <DeliveryRow key={delivery.id} delivery={delivery} />
              ))}
            </tbody>
          </table>
        </section>
      )}
    </section>
  );
}

function DeliveryRow({ delivery }: { delivery: WebhookDelivery }) {
  const { t, language } = useI18n();
  const status = statusLabels[delivery.status];
  return (
    <tr data-testid={`delivery-${delivery.id}`}>
      <td>
        <code>{delivery.type}</code>
      </td>
      <td>
        <span className={`badge ${status?.badge ?? "off"}`} data-testid="delivery-status">
          {status ? t(status.label) : delivery.status}
        </span>
      </td>
      <td className="number">{delivery.attempts}</td>
      <td>{formatSeoulDateTime(delivery.createdAt, language)}</td>
      <td>{delivery.nextAttemptAt ? formatSeoulDateTime(delivery.nextAttemptAt, language) : "—"}</td>
      <td>{lastAnswer(delivery) ?? t("deliveryNoAnswer")}</td>
    </tr>
  );
}

/** The receiver's HTTP status, else why no status came back (a timeout, a refused address). */
function lastAnswer(delivery: WebhookDelivery): string | null {
  if (delivery.lastResponseStatus !== null) return `HTTP ${delivery.lastResponseStatus}`;
  return delivery.lastError;
}
