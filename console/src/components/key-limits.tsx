import { type FormEvent, useEffect, useRef } from "react";
import type { KeyLimits, KeyLimitsView } from "../lib/api";
import { formatCount, formatWon } from "../lib/format";
import { useI18n } from "../lib/i18n";
import { ErrorMessage } from "./ui";

/** A key's limits and its spend this Seoul month, as one table cell. */
export function KeyLimitsSummary({ view, testId }: { view: KeyLimitsView; testId: string }) {
  const { t } = useI18n();
  const { limits, spend } = view;
  const parts = [
    limits.monthlySpendLimitWon === null
      ? null
      : `${formatWon(limits.monthlySpendLimitWon)} ${t("perMonth")}`,
    limits.totalSpendLimitWon === null ? null : `${formatWon(limits.totalSpendLimitWon)} ${t("inTotal")}`,
    limits.rateLimitRequestsPerMinute === null
      ? null
      : `${formatCount(limits.rateLimitRequestsPerMinute)} ${t("perMinute")}`,
  ].filter((part) => part !== null);
  return (
    <div data-testid={testId}>
      <div>{parts.length === 0 ? <span className="muted">{t("noLimits")}</span> : parts.join(" · ")}</div>
      <div className="muted">
        {t("spendThisMonth")} ({spend.month}): <span className="number">{formatWon(spend.monthWon)}</span>
      </div>
    </div>
  );
}

/** Text of a form field, or null when left empty (no limit). */
function optional(form: FormData, name: string): string | null {
  const text = String(form.get(name) ?? "").trim();
  return text === "" ? null : text;
}

/**
 * Sets or clears a key's limits; the server validates (400/100 naming the field) and its message is shown.
 * Empty fields are no limit: the form states the key's whole set of limits, as `PUT …/limits` does.
 */
export function KeyLimitsDialog(props: {
  keyName: string | null;
  limits: KeyLimits | null;
  saving: boolean;
  error: unknown;
  onSave(limits: KeyLimits): void;
  onClear(): void;
  onClose(): void;
}) {
  const { t } = useI18n();
  const dialog = useRef<HTMLDialogElement>(null);
  const open = props.keyName !== null;
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);

  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const rate = optional(form, "rateLimitRequestsPerMinute");
    props.onSave({
      monthlySpendLimitWon: optional(form, "monthlySpendLimitWon"),
      totalSpendLimitWon: optional(form, "totalSpendLimitWon"),
      rateLimitRequestsPerMinute: rate === null ? null : Number(rate),
    });
  }

  return (
    <dialog ref={dialog} onCancel={props.onClose} aria-labelledby="key-limits-title">
      {open && props.limits && (
        <form onSubmit={onSubmit} key={props.keyName} className="limits-form">
          <h2 id="key-limits-title">
            {t("setLimits")}: {props.keyName}
          </h2>
          <p className="muted">{t("limitsHelp")}</p>
          <label>
            {t("monthlySpendLimit")}
            <input
              name="monthlySpendLimitWon"
              inputMode="decimal"
              pattern="\d+(\.\d{1,2})?"
              defaultValue={props.limits.monthlySpendLimitWon ?? ""}
            />
          </label>
          <label>
            {t("totalSpendLimit")}
            <input
              name="totalSpendLimitWon"
              inputMode="decimal"
              pattern="\d+(\.\d{1,2})?"
              defaultValue={props.limits.totalSpendLimitWon ?? ""}
            />
          </label>
          <label>
            {t("rateLimit")}
            <input
              name="rateLimitRequestsPerMinute"
              inputMode="numeric"
              pattern="[1-9]\d*"
              defaultValue={props.limits.rateLimitRequestsPerMinute ?? ""}
            />
          </label>
          <ErrorMessage error={props.error} />
          <div className="row">
            <button type="button" onClick={props.onClose}>
              {t("cancel")}
            </button>
            <button type="button" className="danger" disabled={props.saving} onClick={props.onClear}>
              {t("clearLimits")}
            </button>
            <button type="submit" className="primary" disabled={props.saving}>
              {t("saveLimits")}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
