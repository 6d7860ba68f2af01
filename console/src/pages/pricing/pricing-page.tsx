import { useQuery } from "@tanstack/react-query";
import { adminApi } from "../../lib/api";
import { useI18n } from "../../lib/i18n";
import { DiscountForm } from "./discount-form";
import { DiscountHistory } from "./discount-history";
import { PriceForm } from "./price-form";
import { PriceHistory } from "./price-history";
import { DiscountsCard, PricesCard } from "./pricing-tables";

/** Prices and discounts in force, the forms that change them, and every change made so far. */
export function PricingPage() {
  const { t } = useI18n();
  const prices = useQuery({ queryKey: ["admin", "prices"], queryFn: adminApi.prices });
  const discounts = useQuery({ queryKey: ["admin", "discounts"], queryFn: adminApi.discounts });
  const models = prices.data?.data.map((price) => price.model) ?? [];
  return (
    <>
      <h1>{t("navPricing")}</h1>
      <div className="grid two">
        <PriceForm prices={prices.data?.data ?? []} />
        <DiscountForm models={models} />
      </div>
      <DiscountsCard discounts={discounts.data?.data} error={discounts.error} />
      <PricesCard prices={prices.data?.data} error={prices.error} />
      <PriceHistory models={models} />
      <DiscountHistory />
    </>
  );
}
