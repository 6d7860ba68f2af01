import type { BillingHistoryEntry } from "../../lib/api";
import {
  formatChargeWon,
  formatCount,
  formatDecimal,
  formatMicroWon,
  formatRate,
  formatSeoulDateTime,
} from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { keyLabelOf } from "../../lib/key-label";

export function ChargeRow({ entry }: { entry: BillingHistoryEntry }) {
  const { t, language } = useI18n();
  const tokens = entry.breakdown.tokens;
  return (
    <tr data-testid="charge-row">
      <td>{formatSeoulDateTime(entry.startedAt, language)}</td>
      <td>{entry.model}</td>
      <td data-testid="charge-key">{keyLabelOf(entry.keyId, entry.keyName, language)}</td>
      <td>{formatCount(tokens.input + tokens.output)}</td>
      <td className="number">{formatChargeWon(entry.amountWon)}</td>
      <td>
        <details>
          <summary>{t("details")}</summary>
          <ChargeBreakdown entry={entry} />
        </details>
      </td>
    </tr>
  );
}

/** How the charge was computed: tokens at the USD unit prices, at the day's FX rate, less the discount. */
function ChargeBreakdown({ entry }: { entry: BillingHistoryEntry }) {
  const { t } = useI18n();
  const b = entry.breakdown;
  return (
    <dl className="breakdown">
      <dt>{t("requestId")}</dt>
      <dd>
        <code>{entry.requestId}</code>
      </dd>
      <dt>{t("endpoint")}</dt>
      <dd>{entry.endpoint}</dd>
      <dt>{t("tokens")}</dt>
      <dd>
        {t("inputTokens")} {formatCount(b.tokens.input)} · {t("cachedTokens")} {formatCount(b.tokens.cached)}{" "}
        · {t("outputTokens")} {formatCount(b.tokens.output)} · {t("reasoningTokens")}{" "}
        {formatCount(b.tokens.reasoning)}
      </dd>
      <dt>{t("unitPrices")}</dt>
      <dd>
        {t("inputPrice")} ${formatDecimal(b.inputUsdPerMillionTokens)} · {t("cachedPrice")} $
        {formatDecimal(b.cachedInputUsdPerMillionTokens)} · {t("outputPrice")} $
        {formatDecimal(b.outputUsdPerMillionTokens)}
      </dd>
      <dt>{t("usd")}</dt>
      <dd>${b.usd}</dd>
      <dt>{t("fxRate")}</dt>
      <dd>
        {formatDecimal(b.fxRateKrwPerUsd)} ({t("rateDate")} {b.fxRateDate})
      </dd>
      <dt>{t("discount")}</dt>
      <dd>{formatRate(b.discountRate)}</dd>
      <dt>{t("exactAmount")}</dt>
      <dd>{formatMicroWon(entry.amountWon)}</dd>
      <dt>{t("source")}</dt>
      <dd>{b.usageSource}</dd>
    </dl>
  );
}
