import { type ReactNode, useEffect, useRef } from "react";
import { ApiFailure } from "../lib/api";
import { useI18n } from "../lib/i18n";

/**
 * The few building blocks the console needs, on native elements: `<dialog>` gives focus trapping, Escape and
 * the modal role for free; tables, labels and buttons are the accessible primitives already.
 */

/** A ref for a `<dialog>` that is shown as a modal while `open` and closed otherwise. */
export function useModalDialog(open: boolean) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  return dialog;
}

export function ConfirmDialog(props: {
  open: boolean;
  message: string;
  confirmLabel: string;
  danger?: boolean;
  onConfirm(): void;
  onCancel(): void;
}) {
  const { t } = useI18n();
  const dialog = useModalDialog(props.open);
  return (
    <dialog ref={dialog} onCancel={props.onCancel} aria-labelledby="confirm-message">
      <p id="confirm-message">{props.message}</p>
      <div className="row">
        <button type="button" onClick={props.onCancel}>
          {t("cancel")}
        </button>
        <button type="button" className={props.danger ? "danger" : "primary"} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function ErrorMessage({ error }: { error: unknown }) {
  const { t } = useI18n();
  if (!error) return null;
  const text = error instanceof ApiFailure || error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="error">
      {t("error")}: {text}
    </p>
  );
}

export function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="card" aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}
