import { useQuery } from "@tanstack/react-query";
import { adminApi } from "../../lib/api";
import { fxSeries } from "../../lib/fx-series";
import { useI18n } from "../../lib/i18n";
import { FxChart } from "./fx-chart";
import { FxHistoryCard } from "./fx-history-card";
import { BankRefreshCard, ManualRateCard } from "./fx-rate-cards";

/** The KRW/USD rate by day: set by hand or asked of the bank, charted, and listed as recorded. */
export function FxRatesPage() {
  const { t } = useI18n();
  const rates = useQuery({ queryKey: ["admin", "fx"], queryFn: adminApi.fxRates });
  return (
    <>
      <h1>{t("navFx")}</h1>
      <div className="grid two">
        <ManualRateCard />
        {/* Only a gateway with the bank's key can ask it; without one, rates are set by hand. */}
        {rates.data?.bankSourceConfigured && <BankRefreshCard />}
      </div>
      {rates.data && rates.data.data.length > 0 && <FxChart points={fxSeries(rates.data.data)} />}
      <FxHistoryCard rates={rates.data?.data} error={rates.error} />
    </>
  );
}
