import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorMessage } from "../components/ui";
import { userApi } from "../lib/api";
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
  const priced = models.data?.data.find((model) => model.pricing !== null)?.pricing ?? null;
  return (
    <>
      <h1>{t("navModels")}</h1>
      <div className="row wrap">
        <label>
          {t("scope")}
          <select
            value={isOrganization ? "organization" : "personal"}
            onChange={(event) => setIsOrganization(event.target.value === "organization")}
          >
            <option value="personal">{t("personal")}</option>
            {hasOrganization && <option value="organization">{t("organization")}</option>}
          </select>
        </label>
      </div>
      {priced && (
        <p className="muted" data-testid="models-fx">
          {t("pricesAtRate")} {formatDecimal(priced.fxRateKrwPerUsd)} KRW/USD ({t("rateDate")}{" "}
          {priced.fxRateDate})
        </p>
      )}
      <ErrorMessage error={models.error} />
      {models.data && (
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
                {models.data.data.map((model) => (
                  <tr key={model.id} data-testid={`model-row-${model.id}`}>
                    <td>
                      {model.id}
                      <div className="muted">{model.owned_by}</div>
                    </td>
                    {model.pricing ? (
                      <>
                        <td className="number">
                          {formatWon(model.pricing.inputWonPerMillionTokens)}
                          <div className="muted">
                            ${formatDecimal(model.pricing.inputUsdPerMillionTokens)}
                          </div>
                        </td>
                        <td className="number">
                          {formatWon(model.pricing.cachedInputWonPerMillionTokens)}
                          <div className="muted">
                            ${formatDecimal(model.pricing.cachedInputUsdPerMillionTokens)}
                          </div>
                        </td>
                        <td className="number">
                          {formatWon(model.pricing.outputWonPerMillionTokens)}
                          <div className="muted">
                            ${formatDecimal(model.pricing.outputUsdPerMillionTokens)}
                          </div>
                        </td>
                        <td className="number">{formatRate(model.pricing.discountRate)}</td>
                      </>
                    ) : (
                      <td colSpan={4}>{t("notPricedNow")}</td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="muted">{t("pricesPerMillion")}</p>
        </section>
      )}
    </>
  );
}
