import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Card, ErrorMessage } from "../../components/ui";
import { adminApi, type ConsolePriceRow } from "../../lib/api";
import { decimalPattern, fieldText } from "../../lib/form-fields";
import { useI18n } from "../../lib/i18n";
import { useOneSubmissionAtATime } from "../../lib/one-submission-at-a-time";

type PriceInput = {
  model: string;
  inputUsdPer1M: string;
  outputUsdPer1M: string;
  cachedInputUsdPer1M: string;
};

function priceInputOf(form: FormData): PriceInput {
  return {
    model: fieldText(form, "model"),
    inputUsdPer1M: fieldText(form, "input"),
    outputUsdPer1M: fieldText(form, "output"),
    cachedInputUsdPer1M: fieldText(form, "cached"),
  };
}

/** Sets a model's USD prices per million tokens. */
export function PriceForm({ prices }: { prices: readonly ConsolePriceRow[] }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const setPrice = useMutation({
    mutationFn: ({ model, cachedInputUsdPer1M, ...price }: PriceInput) =>
      adminApi.setPrice(model, { ...price, ...(cachedInputUsdPer1M ? { cachedInputUsdPer1M } : {}) }),
    onSuccess: () => void client.invalidateQueries({ queryKey: ["admin"] }),
  });
  const [priceModel, setPriceModel] = useState("");
  // The form starts from the price in force, so a field left as is keeps its value (an omitted cached price
  // would otherwise become the input price).
  const current = prices.find((price) => price.model === (priceModel || prices[0]?.model));
  const submitOnce = useOneSubmissionAtATime();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const price = priceInputOf(new FormData(event.currentTarget));
    submitOnce(() => setPrice.mutateAsync(price));
  }
  return (
    <Card title={t("setPrice")}>
      <form className="stack" onSubmit={onSubmit}>
        <PriceModelSelect
          models={prices.map((price) => price.model)}
          value={current?.model ?? ""}
          onChange={setPriceModel}
        />
        <PriceField
          label={t("inputPrice")}
          name="input"
          model={current?.model}
          value={current?.inputUsdPer1M}
        />
        <PriceField
          label={t("outputPrice")}
          name="output"
          model={current?.model}
          value={current?.outputUsdPer1M}
        />
        <PriceField
          label={t("cachedPrice")}
          name="cached"
          model={current?.model}
          value={current?.cachedInputUsdPer1M}
        />
        <button type="submit" className="primary" disabled={setPrice.isPending}>
          {t("save")}
        </button>
        <ErrorMessage error={setPrice.error} />
        {setPrice.isSuccess && <p role="status">{t("saved")}</p>}
      </form>
    </Card>
  );
}

/** Keyed by the model and the price in force: another model, or a saved change, refills the field. */
function PriceField(props: { label: string; name: string; model?: string; value?: string }) {
  return (
    <label>
      {props.label} (USD / 1M)
      <input
        key={`${props.name}:${props.model}:${props.value}`}
        name={props.name}
        required
        inputMode="decimal"
        pattern={decimalPattern}
        defaultValue={props.value}
      />
    </label>
  );
}

function PriceModelSelect(props: {
  models: readonly string[];
  value: string;
  onChange(model: string): void;
}) {
  const { t } = useI18n();
  return (
    <label>
      {t("model")}
      <select
        name="model"
        required
        value={props.value}
        onChange={(event) => props.onChange(event.target.value)}
      >
        {props.models.map((model) => (
          <option key={model}>{model}</option>
        ))}
      </select>
    </label>
  );
}
