import { ConfirmDialog } from "../../components/ui";
import { type MessageKey, useI18n } from "../../lib/i18n";
import type { KeyAction, PendingKeyAction } from "./use-keys";

const confirmMessages: Record<KeyAction, MessageKey> = {
  delete: "confirmDelete",
  deactivate: "confirmDeactivate",
  reactivate: "confirmReactivate",
};

/** Asks before a key is turned off, on or deleted; only reactivating is not shown as dangerous. */
export function KeyActionConfirm(props: {
  pending: PendingKeyAction | null;
  onCancel(): void;
  onConfirm(): void;
}) {
  const { t } = useI18n();
  const { pending } = props;
  return (
    <ConfirmDialog
      open={pending !== null}
      message={pending ? `${pending.key.name}: ${t(confirmMessages[pending.action])}` : ""}
      confirmLabel={pending ? t(pending.action) : t("confirm")}
      danger={pending?.action !== "reactivate"}
      onCancel={props.onCancel}
      onConfirm={props.onConfirm}
    />
  );
}
