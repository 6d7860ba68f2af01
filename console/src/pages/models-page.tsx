import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ScopeSelect } from "../components/scope-select";
import { ErrorMessage } from "../components/ui";
import { type PricedModel, userApi } from "../lib/api";
import { formatDecimal, formatRate, formatWon } from "../lib/format";
import { useI18n } from "../lib/i18n";

/**
 * Every served model with what a million tokens cost the caller today, in won: the USD price at today's FX
 * rate less the caller's discount, as GET /llm/v1/models shows an API key. A charge is always computed from
 * its own token counts; these are the rates behind it.
 */
export function ModelsPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const [isOrganization, setIsOrganization] = useState(false);
  const models = useQuery({
    queryKey: ["models", isOrganization],
    queryFn: () => userApi.models(isOrganization),
  });
  // Every priced model is priced at the same day's rate: the first one says which.
  const priced = models.data?.data.find((model) => model.pricing !== null)?.pricing ?? null;
  return (
    <>
      <h1>{t("navModels")}</h1>
      <div className="row wrap">
        <ScopeSelect
          isOrganization={isOrganization}
          hasOrganization={hasOrganization}
          onChange={setIsOrganization}
        />
      </div>
      {priced && (
        <p className="muted" data-testid="models-fx">
          {t("pricesAtRate")} {formatDecimal(priced.fxRateKrwPerUsd)} KRW/USD ({t("rateDate")}{" "}
          {priced.fxRateDate})
        </p>
      )}
      <ErrorMessage error={models.error} />
      {models.data && <ModelsTable models={models.data.data} />}
    </>
  );
}

function ModelsTable({ models }: { models: readonly PricedModel[] }) {
  const { t } = useI18n();
  return (
    <section className="card" aria-label={t("navModels")}>
      <div className="table-scroll">
        <table data-testid="models-table">
          <thead>
            <tr>
              <th scope="col">{t("model")}</th>
              <th scope="col">{t("inputPrice")}</th>
              <th scope="col">{t("cachedPrice")}</th>
              <th scope="col">{t("outputPrice")}</th>
              <th scope="col">{t("discount")}</th>
            </tr>
          </thead>
          <tbody>
            {models.map((model) => (
              <ModelRow key={model.id} model={model} />
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted">{t("pricesPerMillion")}</p>
    </section>
  );
}

function ModelRow({ model }: { model: PricedModel }) {
  const { t } = useI18n();
  const { pricing } = model;
  return (
    <tr data-testid={`model-row-${model.id}`}>
      <td>
        {model.id}
        <div className="muted">{model.owned_by}</div>
      </td>
      {pricing ? (
        <>
          <PriceCell won={pricing.inputWonPerMillionTokens} usd={pricing.inputUsdPerMillionTokens} />
          <PriceCell
            won={pricing.cachedInputWonPerMillionTokens}
            usd={pricing.cachedInputUsdPerMillionTokens}
          />
          <PriceCell won={pricing.outputWonPerMillionTokens} usd={pricing.outputUsdPerMillionTokens} />
          <td className="number">{formatRate(pricing.discountRate)}</td>
        </>
      ) : (
        <td colSpan={4}>{t("notPricedNow")}</td>
      )}
    </tr>
  );
}

/** The won price the caller pays, with the USD list price under it. */
function PriceCell({ won, usd }: { won: string; usd: string }) {
  return (
    <td className="number">
      {formatWon(won)}
      <div className="muted">${formatDecimal(usd)}</div>
    </td>
  );
}
