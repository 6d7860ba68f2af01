import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Card, ConfirmDialog, ErrorMessage } from "../../components/ui";
import { adminApi, type ConsoleDiscountRow, type ConsolePriceRow } from "../../lib/api";
import { formatDecimal, formatRate, formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";

/** The discounts in force, by scope, each removable (the next less specific rule then applies). */
export function DiscountsCard(props: {
  discounts: readonly ConsoleDiscountRow[] | undefined;
  error: unknown;
}) {
  const { t, language } = useI18n();
  const client = useQueryClient();
  const [removing, setRemoving] = useState<ConsoleDiscountRow | null>(null);
  const remove = useMutation({
    mutationFn: adminApi.removeDiscount,
    onSuccess: () => void client.invalidateQueries({ queryKey: ["admin"] }),
  });
  const scopeText = (discount: ConsoleDiscountRow) =>
    `${discount.model ?? t("anyModel")} · ${discount.organizationId ?? t("anyAccount")}`;
  return (
    <Card title={t("discounts")}>
      <ErrorMessage error={props.error ?? remove.error} />
      <div className="table-scroll">
        <table data-testid="discounts-table">
          <thead>
            <tr>
              <th scope="col">{t("model")}</th>
              <th scope="col">{t("organization")}</th>
              <th scope="col">{t("rate")}</th>
              <th scope="col">{t("effectiveAt")}</th>
              <th scope="col">
                <span className="visually-hidden">{t("actions")}</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {props.discounts?.map((discount) => (
              <tr key={`${discount.model}:${discount.organizationId}`}>
                <td>{discount.model ?? t("anyModel")}</td>
                <td>{discount.organizationId ?? t("anyAccount")}</td>
                <td className="number">{formatRate(discount.rate)}</td>
                <td>{formatSeoulDateTime(discount.effectiveAt, language)}</td>
                <td>
                  <button
                    type="button"
                    className="danger"
                    aria-label={`${t("removeDiscount")}: ${scopeText(discount)}`}
                    disabled={remove.isPending}
                    onClick={() => setRemoving(discount)}
                  >
                    {t("removeDiscount")}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={removing !== null}
        message={removing ? `${scopeText(removing)}: ${t("confirmRemoveDiscount")}` : ""}
        confirmLabel={t("removeDiscount")}
        danger
        onCancel={() => setRemoving(null)}
        onConfirm={() => {
          if (removing) remove.mutate({ model: removing.model, organizationId: removing.organizationId });
          setRemoving(null);
        }}
      />
    </Card>
  );
}

/** The price in force of every model: set by an admin, or the catalog's own until one is. */
export function PricesCard(props: { prices: readonly ConsolePriceRow[] | undefined; error: unknown }) {
  const { t, language } = useI18n();
  return (
    <Card title={t("prices")}>
      <ErrorMessage error={props.error} />
      <div className="table-scroll">
        <table data-testid="prices-table">
          <thead>
            <tr>
              <th scope="col">{t("model")}</th>
              <th scope="col">{t("inputPrice")}</th>
              <th scope="col">{t("cachedPrice")}</th>
              <th scope="col">{t("outputPrice")}</th>
              <th scope="col">{t("effectiveAt")}</th>
            </tr>
          </thead>
          <tbody>
            {props.prices?.map((price) => (
              <tr key={price.model} data-testid={`price-row-${price.model}`}>
                <td>{price.model}</td>
                <td className="number">${formatDecimal(price.inputUsdPer1M)}</td>
                <td className="number">${formatDecimal(price.cachedInputUsdPer1M)}</td>
                <td className="number">${formatDecimal(price.outputUsdPer1M)}</td>
                <td>
                  {price.effectiveAt ? formatSeoulDateTime(price.effectiveAt, language) : t("catalogDefault")}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
