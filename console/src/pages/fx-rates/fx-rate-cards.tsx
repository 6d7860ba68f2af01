import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi } from "../../lib/api";
import { decimalPattern, fieldText } from "../../lib/form-fields";
import { seoulDateOf } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { useOneSubmissionAtATime } from "../../lib/one-submission-at-a-time";

/** A change of rate is read back at once: the chart and the history show it. */
function useFxRateMutation<Input>(write: (input: Input) => Promise<unknown>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: write,
    onSuccess: () => void client.invalidateQueries({ queryKey: ["admin", "fx"] }),
  });
}

/** Sets the rate of a Seoul day by hand; the bank's own date of the rate is optional. */
export function ManualRateCard() {
  const { t } = useI18n();
  const setRate = useFxRateMutation(adminApi.setFxRate);
  const submitOnce = useOneSubmissionAtATime();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const rateDate = fieldText(form, "rateDate");
    const rate = {
      appliesOn: fieldText(form, "appliesOn"),
      rate: fieldText(form, "rate"),
      ...(rateDate ? { rateDate } : {}),
    };
    submitOnce(() => setRate.mutateAsync(rate));
  }
  return (
    <Card title={t("manualRate")}>
      <form className="stack" onSubmit={onSubmit}>
        <label>
          {t("appliesOn")}
          <input type="date" name="appliesOn" required defaultValue={seoulDateOf(new Date())} />
        </label>
        <label>
          {t("rate")} (KRW/USD)
          <input name="rate" required inputMode="decimal" pattern={decimalPattern} />
        </label>
        <label>
          {t("rateDate")}
          <input type="date" name="rateDate" />
        </label>
        <button type="submit" className="primary" disabled={setRate.isPending}>
          {t("save")}
        </button>
        <ErrorMessage error={setRate.error} />
        {setRate.isSuccess && <p role="status">{t("saved")}</p>}
      </form>
    </Card>
  );
}

/** Asks the bank for today's rate now, rather than waiting for the scheduled refresh. */
export function BankRefreshCard() {
  const { t } = useI18n();
  const refresh = useFxRateMutation<void>(adminApi.refreshFxRate);
  return (
    <Card title={t("refreshNow")}>
      <button type="button" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
        {t("refreshNow")}
      </button>
      <ErrorMessage error={refresh.error} />
      {refresh.isSuccess && <p role="status">{t("refreshed")}</p>}
    </Card>
  );
}
