import type { FormEvent } from "react";
import { Card, ErrorMessage } from "../../components/ui";
import { decimalPattern, fieldText, resetWhenAccepted } from "../../lib/form-fields";
import { formatWon } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/** The account's low-funds threshold: balance.low is sent when available funds fall below it. */
export function AlertThresholdCard(props: {
  balanceBelowWon: string | null | undefined;
  saving: boolean;
  error: unknown;
  onSave(balanceBelowWon: string | null): Promise<unknown>;
}) {
  const { t } = useI18n();
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    resetWhenAccepted(form, props.onSave(fieldText(new FormData(form), "balanceBelowWon")));
  }
  return (
    <Card title={t("alertThresholdTitle")}>
      {props.balanceBelowWon === undefined ? null : (
        <p data-testid="alert-threshold">
          {props.balanceBelowWon === null ? (
            t("alertThresholdNone")
          ) : (
            <>
              {t("alertThresholdCurrent")} <strong>{formatWon(props.balanceBelowWon)}</strong>
            </>
          )}
        </p>
      )}
      <form className="row wrap" onSubmit={submit}>
        <label>
          {t("alertThresholdLabel")}
          <input name="balanceBelowWon" inputMode="decimal" pattern={decimalPattern} required />
        </label>
        <button type="submit" className="primary" disabled={props.saving}>
          {t("alertThresholdSave")}
        </button>
        {props.balanceBelowWon ? (
          <button type="button" disabled={props.saving} onClick={() => props.onSave(null)}>
            {t("alertThresholdClear")}
          </button>
        ) : null}
      </form>
      <ErrorMessage error={props.error} />
    </Card>
  );
}
