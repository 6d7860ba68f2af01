import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi } from "../../lib/api";
import { decimalPattern, fieldText } from "../../lib/form-fields";
import { useI18n } from "../../lib/i18n";
import { inputLengthsMax } from "../../lib/input-bounds";
import { useOneSubmissionAtATime } from "../../lib/one-submission-at-a-time";

/** Sets a discount rate for a model, an organization, both or neither (an empty field is "any"). */
export function DiscountForm({ models }: { models: readonly string[] }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const setDiscount = useMutation({
    mutationFn: adminApi.setDiscount,
    onSuccess: () => void client.invalidateQueries({ queryKey: ["admin"] }),
  });
  const submitOnce = useOneSubmissionAtATime();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const discount = {
      model: fieldText(form, "model") || null,
      organizationId: fieldText(form, "organizationId") || null,
      rate: fieldText(form, "rate"),
    };
    submitOnce(() => setDiscount.mutateAsync(discount));
  }
  return (
    <Card title={t("setDiscount")}>
      <form className="stack" onSubmit={onSubmit}>
        <label>
          {t("model")}
          <select name="model" defaultValue="">
            <option value="">{t("anyModel")}</option>
            {models.map((model) => (
              <option key={model}>{model}</option>
            ))}
          </select>
        </label>
        <label>
          {t("organizationId")} · ∅ = {t("anyAccount")}
          <input name="organizationId" maxLength={inputLengthsMax.accountId} />
        </label>
        <label>
          {t("rate")} ({t("rateHelp")})
          <input name="rate" required inputMode="decimal" pattern={decimalPattern} />
        </label>
        <button type="submit" className="primary" disabled={setDiscount.isPending}>
          {t("save")}
        </button>
        <ErrorMessage error={setDiscount.error} />
        {setDiscount.isSuccess && <p role="status">{t("saved")}</p>}
      </form>
    </Card>
  );
}
