import { type ReactNode, type RefObject, useRef, useState } from "react";
import { useI18n } from "../lib/i18n";

type CopyOutcome = "copied" | "selected";

/** Selects the text of an element on the page (an input's value, a code's contents) for the user to copy. */
function selectText(element: HTMLElement): void {
  if (element instanceof HTMLInputElement || element instanceof HTMLTextAreaElement) {
    element.focus();
    element.select();
    return;
  }
  window.getSelection()?.selectAllChildren(element);
}

/**
 * Copies the text, or selects it where the page may not: `navigator.clipboard` exists only in a secure
 * context (HTTPS or localhost), so a console served over plain HTTP under another host name has none, and a
 * browser may refuse a write too.
 */
async function copyOrSelect(text: string, target: HTMLElement | null): Promise<CopyOutcome> {
  if (navigator.clipboard) {
    try {
      await navigator.clipboard.writeText(text);
      return "copied";
    } catch {
      // Refused (permission, focus): select it instead.
    }
  }
  if (target) selectText(target);
  return "selected";
}

/**
 * A Copy button for the text shown in `target`. Where the browser does not let the page copy, the text is
 * selected and the page says to copy it with the keyboard: never a button that silently does nothing.
 */
export function CopyButton(props: {
  text: string;
  target: RefObject<HTMLElement | null>;
  className?: string;
  /** Visually hidden words telling this button from others like it. */
  children?: ReactNode;
}) {
  const { t } = useI18n();
  const [outcome, setOutcome] = useState<CopyOutcome | null>(null);
  return (
    <>
      <button
        type="button"
        className={props.className}
        onClick={async () => setOutcome(await copyOrSelect(props.text, props.target.current))}
      >
        {outcome === "copied" ? t("copied") : t("copy")}
        {props.children}
      </button>
      <span role="status" className="muted" data-testid="copy-status">
        {outcome === "selected" ? t("copySelected") : ""}
      </span>
    </>
  );
}

/** A value shown as code with its Copy button beside it (the code is what is selected where copying is refused). */
export function CopyableCode(props: {
  text: string;
  testId: string;
  codeClassName?: string;
  buttonClassName?: string;
  children?: ReactNode;
}) {
  const code = useRef<HTMLElement>(null);
  return (
    <>
      <code ref={code} className={props.codeClassName} data-testid={props.testId}>
        {props.text}
      </code>{" "}
      <CopyButton text={props.text} target={code} className={props.buttonClassName}>
        {props.children}
      </CopyButton>
    </>
  );
}
