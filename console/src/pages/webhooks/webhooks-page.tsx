import { useRef, useState } from "react";
import { ConfirmDialog, ErrorMessage } from "../../components/ui";
import type { WebhookEndpoint } from "../../lib/api";
import { useI18n } from "../../lib/i18n";
import { KeyScopeChoice } from "../keys/key-scope-choice";
import { useOrganizationAccess } from "../members/use-organization-access";
import { AddWebhookCard, WebhookSecretCard } from "./add-webhook-card";
import { AlertThresholdCard } from "./alert-threshold-card";
import { DeliveryLog } from "./delivery-log";
import { useWebhooks } from "./use-webhooks";
import { WebhooksTable } from "./webhooks-table";

/**
 * Alerts by signed webhooks (docs/api.md): the low-funds threshold, the endpoints, their signing secret once
 * and each endpoint's deliveries. Personal ones are the user's; the organization's only its owners and admins
 * manage (403/160), so a member is told so and nothing is asked for.
 */
export function WebhooksPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const [isOrganization, setIsOrganization] = useState(false);
  const access = useOrganizationAccess(hasOrganization);
  const mayManage = !isOrganization || access.may("manage-alerts");
  return (
    <>
      <h1>{t("navWebhooks")}</h1>
      <p className="muted">{t("webhooksHelp")}</p>
      <KeyScopeChoice
        isOrganization={isOrganization}
        hasOrganization={hasOrganization}
        onChange={setIsOrganization}
      />
      {!mayManage && access.members.isPending && <p>{t("loading")}</p>}
      {!mayManage && access.members.data && (
        // A status: it also replaces the forms when a refusal has shown the session's role changed.
        <p className="warning" role="status" data-testid="webhooks-owners-only">
          {t("webhooksOwnersOnly")}
        </p>
      )}
      <ErrorMessage error={isOrganization ? access.members.error : null} />
      {/* Keyed by the account: a secret or an open log of one account is not shown under the other. */}
      {mayManage && <ManagedWebhooks key={String(isOrganization)} isOrganization={isOrganization} />}
    </>
  );
}

function ManagedWebhooks({ isOrganization }: { isOrganization: boolean }) {
  const { t } = useI18n();
  const webhooks = useWebhooks(isOrganization);
  const [deleting, setDeleting] = useState<WebhookEndpoint | null>(null);
  const [rotating, setRotating] = useState<WebhookEndpoint | null>(null);
  const [shownLog, setShownLog] = useState<WebhookEndpoint | null>(null);
  // A deleted endpoint's row goes with the button that had focus: focus moves to the list's heading instead.
  const listHeading = useRef<HTMLHeadingElement>(null);
  const endpoints = webhooks.list.data?.data;
  // A deleted endpoint's log goes with it.
  const logEndpoint = endpoints?.find((endpoint) => endpoint.id === shownLog?.id) ?? null;
  return (
    <>
      <AlertThresholdCard
        balanceBelowWon={webhooks.threshold.data?.balanceBelowWon}
        saving={webhooks.setThreshold.isPending}
        error={webhooks.threshold.error ?? webhooks.setThreshold.error}
        onSave={(balanceBelowWon) => webhooks.setThreshold.mutateAsync(balanceBelowWon)}
      />
      <AddWebhookCard
        adding={webhooks.add.isPending}
        error={webhooks.add.error}
        onAdd={(endpoint) => webhooks.add.mutateAsync({ ...endpoint, isOrganization })}
        onEdit={() => webhooks.add.reset()}
      />
      {webhooks.shownSecret && (
        <WebhookSecretCard
          key={webhooks.shownSecret.webhookId}
          shown={webhooks.shownSecret}
          onDone={() => webhooks.setShownSecret(null)}
        />
      )}
      <h2 ref={listHeading} tabIndex={-1}>
        {t("webhooksTitle")}
      </h2>
      <ErrorMessage
        error={
          webhooks.list.error ?? webhooks.remove.error ?? webhooks.rotate.error ?? webhooks.sendTest.error
        }
      />
      {endpoints && endpoints.length === 0 && <p>{t("noWebhooks")}</p>}
      {endpoints && endpoints.length > 0 && (
        <WebhooksTable
          endpoints={endpoints}
          shownLogId={logEndpoint?.id ?? null}
          testing={webhooks.sendTest.isPending}
          onToggleLog={(endpoint) => setShownLog(logEndpoint?.id === endpoint.id ? null : endpoint)}
          onSendTest={(endpoint) => {
            // The test's delivery is what one wants to watch next.
            setShownLog(endpoint);
            webhooks.sendTest.mutate(endpoint);
          }}
          rotating={webhooks.rotate.isPending}
          onRotateSecret={setRotating}
          onDelete={setDeleting}
        />
      )}
      {logEndpoint && <DeliveryLog endpoint={logEndpoint} />}
      <ConfirmDialog
        open={rotating !== null}
        message={rotating ? `${rotating.url}: ${t("confirmRotateWebhookSecret")}` : ""}
        confirmLabel={t("rotateSecret")}
        onCancel={() => setRotating(null)}
        onConfirm={() => {
          if (rotating) webhooks.rotate.mutate(rotating);
          setRotating(null);
        }}
      />
      <ConfirmDialog
        open={deleting !== null}
        message={deleting ? `${deleting.url}: ${t("confirmDeleteWebhook")}` : ""}
        confirmLabel={t("delete")}
        danger
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          if (deleting) webhooks.remove.mutate(deleting, { onSuccess: () => listHeading.current?.focus() });
          setDeleting(null);
        }}
      />
    </>
  );
}
