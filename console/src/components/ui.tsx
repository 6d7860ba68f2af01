import { type ReactNode, useEffect, useRef } from "react";
import { errorTextOf } from "../lib/error-text";
import { type MessageKey, useI18n } from "../lib/i18n";

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

/**
 * An error in the page's language (lib/error-text.ts): an unreachable gateway and an ended session said
 * plainly, the server's own message kept after a translated sentence. `unauthenticated` is what a 401 means
 * where it is not an ended session (a sign-in form: the token was refused). `failed` says first what did not
 * happen, where the page alone would not (a sign-out: the page looks as before).
 */
export function ErrorMessage({
  error,
  unauthenticated,
  failed,
}: {
  error: unknown;
  unauthenticated?: MessageKey;
  failed?: MessageKey;
}) {
  const { t } = useI18n();
  if (!error) return null;
  const { sentence, detail } = errorTextOf(error, unauthenticated ? { unauthenticated } : {});
  const said = detail === null ? t(sentence) : `${t(sentence)}: ${detail}`;
  return (
    <p role="alert" className="error">
      {failed ? `${t(failed)} ${said}` : said}
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
