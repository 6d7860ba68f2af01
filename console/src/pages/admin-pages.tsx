import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { KeyLimitsDialog, KeyLimitsSummary } from "../components/key-limits";
import { Card, ErrorMessage } from "../components/ui";
import {
  type AccountKeyRow,
  adminApi,
  type DiscountChange,
  type KeyLimits,
  type PriceChange,
} from "../lib/api";
import {
  formatCount,
  formatDecimal,
  formatRate,
  formatSeoulDateTime,
  formatShortDate,
  formatWon,
  seoulDateOf,
} from "../lib/format";
import { type FxPoint, fxSeries } from "../lib/fx-series";
import { useI18n } from "../lib/i18n";
import { IssueKeyCard, SignInLinkCard } from "./user-access-cards";

function field(form: FormData, name: string): string {
  return String(form.get(name) ?? "").trim();
}

/** What the credits API accepts: won above zero with at most two decimals (checked here to say so inline). */
function isTopUpAmount(text: string): boolean {
  return /^\d{1,12}(\.\d{1,2})?$/.test(text) && /[1-9]/.test(text);
}

export function AccountsPage() {
  const { t } = useI18n();
  const client = useQueryClient();
  const accounts = useQuery({ queryKey: ["admin", "accounts"], queryFn: adminApi.accounts });
  const [selected, setSelected] = useState<{ kind: string; id: string } | null>(null);
  const view = useQuery({
    queryKey: ["admin", "account", selected],
    queryFn: () => adminApi.account(selected!.kind, selected!.id),
    enabled: selected !== null,
  });
  const topUp = useMutation({
    mutationFn: (input: { kind: string; id: string; amountWon: string; reference: string }) =>
      adminApi.topUp(input.kind, input.id, input.amountWon, input.reference),
    onSuccess: (_result, input) => {
      setSelected({ kind: input.kind, id: input.id });
      void client.invalidateQueries({ queryKey: ["admin"] });
    },
  });

  const [amountError, setAmountError] = useState(false);

  function onTopUp(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    // A new attempt: the last one's success or failure no longer describes what is on screen.
    topUp.reset();
    const form = new FormData(event.currentTarget);
    const amountWon = field(form, "amountWon");
    if (!isTopUpAmount(amountWon)) {
      setAmountError(true);
      return;
    }
    topUp.mutate({
      kind: field(form, "kind"),
      id: field(form, "id"),
      amountWon: field(form, "amountWon"),
      reference: field(form, "reference"),
    });
  }

  return (
    <>
      <h1>{t("navAccounts")}</h1>
      <Card title={t("topUp")}>
        <form className="row wrap" onSubmit={onTopUp}>
          <label>
            {t("kind")}
            <select name="kind" defaultValue="user">
              <option value="user">{t("personal")} (user)</option>
              <option value="organization">{t("organization")} (organization)</option>
            </select>
          </label>
          <label>
            {t("id")}
            <input name="id" required maxLength={200} />
          </label>
          <label>
            {t("amountWon")}
            <input
              name="amountWon"
              inputMode="decimal"
              aria-invalid={amountError}
              aria-describedby={amountError ? "top-up-amount-error" : undefined}
              onChange={() => {
                setAmountError(false);
                topUp.reset();
              }}
            />
            {amountError && (
              <span id="top-up-amount-error" className="field-error" role="alert">
                {t("invalidTopUpAmount")}
              </span>
            )}
          </label>
          <label>
            {t("reference")}
            <input name="reference" required maxLength={500} />
          </label>
          <button type="submit" className="primary" disabled={topUp.isPending}>
            {t("topUp")}
          </button>
        </form>
        <ErrorMessage error={topUp.error} />
        {topUp.data && (
          <p role="status" data-testid="top-up-result">
            {t("toppedUp")} {formatWon(topUp.data.balanceWon)}
          </p>
        )}
      </Card>
      <div className="grid two">
        <SignInLinkCard />
        <IssueKeyCard />
      </div>
      {selected && view.data && (
        <Card title={`${selected.kind}:${selected.id}`}>
          <p data-testid="account-funds">
            {t("balance")}: <strong>{formatWon(view.data.balanceWon)}</strong> · {t("held")}:{" "}
            {formatWon(view.data.heldWon)} · {t("pending")}: {formatWon(view.data.pendingWon)}
          </p>
          <AccountKeys kind={selected.kind} id={selected.id} />
        </Card>
      )}
      <ErrorMessage error={accounts.error} />
      {accounts.data && accounts.data.data.length === 0 && <p>{t("noAccounts")}</p>}
      {accounts.data && accounts.data.data.length > 0 && (
        <div className="table-scroll">
          <table data-testid="accounts-table">
            <thead>
              <tr>
                <th scope="col">{t("kind")}</th>
                <th scope="col">{t("id")}</th>
                <th scope="col">{t("balance")}</th>
                <th scope="col">{t("held")}</th>
                <th scope="col">{t("pending")}</th>
                <th scope="col">{t("pendingRequests")}</th>
                <th scope="col">{t("details")}</th>
              </tr>
            </thead>
            <tbody>
              {accounts.data.data.map((account) => (
                <tr key={`${account.kind}:${account.id}`}>
                  <td>{account.kind}</td>
                  <td>{account.id}</td>
                  <td className="number">{formatWon(account.balanceWon)}</td>
                  <td className="number">{formatWon(account.heldWon)}</td>
                  <td className="number">{formatWon(account.pendingWon)}</td>
                  <td className="number">{formatCount(account.pendingRequests)}</td>
                  <td>
                    <button type="button" onClick={() => setSelected({ kind: account.kind, id: account.id })}>
                      {t("details")} <span className="visually-hidden">{account.id}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** An account's keys with their limits and month's spend; an admin may set any key's limits. */
function AccountKeys({ kind, id }: { kind: string; id: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const keys = useQuery({
    queryKey: ["admin", "account-keys", kind, id],
    queryFn: () => adminApi.accountKeys(kind, id),
  });
  const [limiting, setLimiting] = useState<AccountKeyRow | null>(null);
  const limit = useMutation({
    mutationFn: ({ key, limits }: { key: AccountKeyRow; limits: KeyLimits | null }) =>
      limits === null ? adminApi.clearKeyLimits(key.uuid) : adminApi.setKeyLimits(key.uuid, limits),
    onSuccess: () => {
      setLimiting(null);
      void client.invalidateQueries({ queryKey: ["admin", "account-keys", kind, id] });
    },
  });
  return (
    <>
      <h3>{t("keys")}</h3>
      <ErrorMessage error={keys.error} />
      {keys.data && keys.data.data.length === 0 && <p>{t("noAccountKeys")}</p>}
      {keys.data && keys.data.data.length > 0 && (
        <div className="table-scroll">
          <table data-testid="account-keys-table">
            <thead>
              <tr>
                <th scope="col">{t("keyName")}</th>
                <th scope="col">{t("status")}</th>
                <th scope="col">{t("limits")}</th>
                <th scope="col">{t("actions")}</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((key) => (
                <tr key={key.uuid}>
                  <td>
                    {key.name} <code>{key.keyPreview}</code>
                  </td>
                  <td>{key.status === 1 ? t("active") : t("inactive")}</td>
                  <td>
                    <KeyLimitsSummary view={key} testId={`admin-key-limits-${key.name}`} />
                  </td>
                  <td>
                    <button
                      type="button"
                      onClick={() => {
                        limit.reset();
                        setLimiting(key);
                      }}
                    >
                      {t("setLimits")} <span className="visually-hidden">{key.name}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <KeyLimitsDialog
        keyName={limiting?.name ?? null}
        limits={limiting?.limits ?? null}
        saving={limit.isPending}
        error={limit.error}
        onSave={(limits) => limiting && limit.mutate({ key: limiting, limits })}
        onClear={() => limiting && limit.mutate({ key: limiting, limits: null })}
        onClose={() => setLimiting(null)}
      />
    </>
  );
}

export function PricingPage() {
  const { t, language } = useI18n();
  const client = useQueryClient();
  const prices = useQuery({ queryKey: ["admin", "prices"], queryFn: adminApi.prices });
  const discounts = useQuery({ queryKey: ["admin", "discounts"], queryFn: adminApi.discounts });
  const invalidate = () => void client.invalidateQueries({ queryKey: ["admin"] });
  const setPrice = useMutation({
    mutationFn: (input: {
      model: string;
      inputUsdPer1M: string;
      outputUsdPer1M: string;
      cachedInputUsdPer1M: string;
    }) =>
      adminApi.setPrice(input.model, {
        inputUsdPer1M: input.inputUsdPer1M,
        outputUsdPer1M: input.outputUsdPer1M,
        ...(input.cachedInputUsdPer1M ? { cachedInputUsdPer1M: input.cachedInputUsdPer1M } : {}),
      }),
    onSuccess: invalidate,
  });
  const setDiscount = useMutation({ mutationFn: adminApi.setDiscount, onSuccess: invalidate });
  const models = prices.data?.data.map((price) => price.model) ?? [];
  const [priceModel, setPriceModel] = useState("");
  // The form starts from the price in force, so a field left as is keeps its value (an omitted cached price
  // would otherwise become the input price).
  const current = prices.data?.data.find((price) => price.model === (priceModel || models[0]));

  function onPrice(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setPrice.mutate({
      model: field(form, "model"),
      inputUsdPer1M: field(form, "input"),
      outputUsdPer1M: field(form, "output"),
      cachedInputUsdPer1M: field(form, "cached"),
    });
  }

  function onDiscount(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setDiscount.mutate({
      model: field(form, "model") || null,
      organizationId: field(form, "organizationId") || null,
      rate: field(form, "rate"),
    });
  }

  const decimal = "\\d+(\\.\\d+)?";
  return (
    <>
      <h1>{t("navPricing")}</h1>
      <div className="grid two">
        <Card title={t("setPrice")}>
          <form className="stack" onSubmit={onPrice}>
            <label>
              {t("model")}
              <select
                name="model"
                required
                value={current?.model ?? ""}
                onChange={(event) => setPriceModel(event.target.value)}
              >
                {models.map((model) => (
                  <option key={model}>{model}</option>
                ))}
              </select>
            </label>
            <label>
              {t("inputPrice")} (USD / 1M)
              <input
                key={`input:${current?.model}:${current?.inputUsdPer1M}`}
                name="input"
                required
                inputMode="decimal"
                pattern={decimal}
                defaultValue={current?.inputUsdPer1M}
              />
            </label>
            <label>
              {t("outputPrice")} (USD / 1M)
              <input
                key={`output:${current?.model}:${current?.outputUsdPer1M}`}
                name="output"
                required
                inputMode="decimal"
                pattern={decimal}
                defaultValue={current?.outputUsdPer1M}
              />
            </label>
            <label>
              {t("cachedPrice")} (USD / 1M)
              <input
                key={`cached:${current?.model}:${current?.cachedInputUsdPer1M}`}
                name="cached"
                required
                inputMode="decimal"
                pattern={decimal}
                defaultValue={current?.cachedInputUsdPer1M}
              />
            </label>
            <button type="submit" className="primary">
              {t("save")}
            </button>
            <ErrorMessage error={setPrice.error} />
            {setPrice.isSuccess && <p role="status">{t("saved")}</p>}
          </form>
        </Card>
        <Card title={t("setDiscount")}>
          <form className="stack" onSubmit={onDiscount}>
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
              {t("organizationId")} ({t("anyOrganization")}: ∅)
              <input name="organizationId" maxLength={200} />
            </label>
            <label>
              {t("rate")} ({t("rateHelp")})
              <input name="rate" required inputMode="decimal" pattern={decimal} />
            </label>
            <button type="submit" className="primary">
              {t("save")}
            </button>
            <ErrorMessage error={setDiscount.error} />
            {setDiscount.isSuccess && <p role="status">{t("saved")}</p>}
          </form>
        </Card>
      </div>
      <Card title={t("discounts")}>
        <ErrorMessage error={discounts.error} />
        <div className="table-scroll">
          <table data-testid="discounts-table">
            <thead>
              <tr>
                <th scope="col">{t("model")}</th>
                <th scope="col">{t("organization")}</th>
                <th scope="col">{t("rate")}</th>
                <th scope="col">{t("effectiveAt")}</th>
              </tr>
            </thead>
            <tbody>
              {discounts.data?.data.map((discount) => (
                <tr key={`${discount.model}:${discount.organizationId}`}>
                  <td>{discount.model ?? t("anyModel")}</td>
                  <td>{discount.organizationId ?? t("anyOrganization")}</td>
                  <td className="number">{formatRate(discount.rate)}</td>
                  <td>{formatSeoulDateTime(discount.effectiveAt, language)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Card>
      <Card title={t("prices")}>
        <ErrorMessage error={prices.error} />
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
              {prices.data?.data.map((price) => (
                <tr key={price.model} data-testid={`price-row-${price.model}`}>
                  <td>{price.model}</td>
                  <td className="number">${formatDecimal(price.inputUsdPer1M)}</td>
                  <td className="number">${formatDecimal(price.cachedInputUsdPer1M)}</td>
                  <td className="number">${formatDecimal(price.outputUsdPer1M)}</td>
                  <td>
                    {price.effectiveAt
                      ? formatSeoulDateTime(price.effectiveAt, language)
                      : t("catalogDefault")}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Card>
      <PriceHistory models={models} />
      <DiscountHistory />
    </>
  );
}

/** Every price change, newest first, with who made it: all models or one. */
function PriceHistory({ models }: { models: readonly string[] }) {
  const { t, language } = useI18n();
  const [model, setModel] = useState("");
  const history = useQuery({
    queryKey: ["admin", "price-history", model],
    queryFn: () => adminApi.priceHistory(model || null),
  });
  return (
    <Card title={t("priceHistory")}>
      <label>
        {t("historyModel")}{" "}
        <select value={model} onChange={(event) => setModel(event.target.value)}>
          <option value="">{t("model_all")}</option>
          {models.map((slug) => (
            <option key={slug}>{slug}</option>
          ))}
        </select>
      </label>
      <ErrorMessage error={history.error} />
      {history.data && history.data.data.length === 0 && <p>{t("noChanges")}</p>}
      {history.data && history.data.data.length > 0 && (
        <div className="table-scroll">
          <table data-testid="price-history-table">
            <thead>
              <tr>
                <th scope="col">{t("effectiveAt")}</th>
                <th scope="col">{t("model")}</th>
                <th scope="col">{t("inputPrice")}</th>
                <th scope="col">{t("cachedPrice")}</th>
                <th scope="col">{t("outputPrice")}</th>
                <th scope="col">{t("changedBy")}</th>
              </tr>
            </thead>
            <tbody>
              {history.data.data.map((change: PriceChange) => (
                <tr key={change.eventId}>
                  <td>{formatSeoulDateTime(change.effectiveAt, language)}</td>
                  <td>{change.model}</td>
                  <td className="number">${formatDecimal(change.inputUsdPer1M)}</td>
                  <td className="number">${formatDecimal(change.cachedInputUsdPer1M)}</td>
                  <td className="number">${formatDecimal(change.outputUsdPer1M)}</td>
                  <td>
                    {change.actor}
                    {change.correlationId && (
                      <>
                        {" "}
                        <code>{change.correlationId}</code>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Card>
  );
}

/** Every discount change of every scope, newest first, replaced rules included. */
function DiscountHistory() {
  const { t, language } = useI18n();
  const history = useQuery({ queryKey: ["admin", "discount-history"], queryFn: adminApi.discountHistory });
  return (
    <Card title={t("discountHistory")}>
      <ErrorMessage error={history.error} />
      {history.data && history.data.data.length === 0 && <p>{t("noChanges")}</p>}
      {history.data && history.data.data.length > 0 && (
        <div className="table-scroll">
          <table data-testid="discount-history-table">
            <thead>
              <tr>
                <th scope="col">{t("effectiveAt")}</th>
                <th scope="col">{t("model")}</th>
                <th scope="col">{t("organization")}</th>
                <th scope="col">{t("rate")}</th>
                <th scope="col">{t("changedBy")}</th>
              </tr>
            </thead>
            <tbody>
              {history.data.data.map((change: DiscountChange) => (
                <tr key={change.eventId}>
                  <td>{formatSeoulDateTime(change.effectiveAt, language)}</td>
                  <td>{change.model ?? t("anyModel")}</td>
                  <td>{change.organizationId ?? t("anyOrganization")}</td>
                  <td className="number">{formatRate(change.rate)}</td>
                  <td>{change.actor}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Card>
  );
}

export function FxRatesPage() {
  const { t, language } = useI18n();
  const client = useQueryClient();
  const rates = useQuery({ queryKey: ["admin", "fx"], queryFn: adminApi.fxRates });
  const invalidate = () => void client.invalidateQueries({ queryKey: ["admin", "fx"] });
  const setRate = useMutation({ mutationFn: adminApi.setFxRate, onSuccess: invalidate });
  const refresh = useMutation({ mutationFn: adminApi.refreshFxRate, onSuccess: invalidate });

  function onRate(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const rateDate = field(form, "rateDate");
    setRate.mutate({
      appliesOn: field(form, "appliesOn"),
      rate: field(form, "rate"),
      ...(rateDate ? { rateDate } : {}),
    });
  }

  return (
    <>
      <h1>{t("navFx")}</h1>
      <div className="grid two">
        <Card title={t("manualRate")}>
          <form className="stack" onSubmit={onRate}>
            <label>
              {t("appliesOn")}
              <input type="date" name="appliesOn" required defaultValue={seoulDateOf(new Date())} />
            </label>
            <label>
              {t("rate")} (KRW/USD)
              <input name="rate" required inputMode="decimal" pattern="\d+(\.\d+)?" />
            </label>
            <label>
              {t("rateDate")}
              <input type="date" name="rateDate" />
            </label>
            <button type="submit" className="primary">
              {t("save")}
            </button>
            <ErrorMessage error={setRate.error} />
            {setRate.isSuccess && <p role="status">{t("saved")}</p>}
          </form>
        </Card>
        {/* Only a gateway with the bank's key can ask it; without one, rates are set by hand. */}
        {rates.data?.bankSourceConfigured && (
          <Card title={t("refreshNow")}>
            <button type="button" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
              {t("refreshNow")}
            </button>
            <ErrorMessage error={refresh.error} />
            {refresh.isSuccess && <p role="status">{t("refreshed")}</p>}
          </Card>
        )}
      </div>
      {rates.data && rates.data.data.length > 0 && <FxChart points={fxSeries(rates.data.data)} />}
      <Card title={t("fxHistory")}>
        <ErrorMessage error={rates.error} />
        <div className="table-scroll">
          <table data-testid="fx-table">
            <thead>
              <tr>
                <th scope="col">{t("appliesOn")}</th>
                <th scope="col">{t("rate")}</th>
                <th scope="col">{t("rateDate")}</th>
                <th scope="col">{t("fxSource")}</th>
                <th scope="col">{t("recordedAt")}</th>
              </tr>
            </thead>
            <tbody>
              {rates.data?.data.map((rate) => (
                <tr key={`${rate.appliesOn}:${rate.recordedAt}`}>
                  <td>{rate.appliesOn}</td>
                  <td className="number">{formatDecimal(rate.rate)}</td>
                  <td>{rate.rateDate}</td>
                  <td>{rate.source}</td>
                  <td>{formatSeoulDateTime(rate.recordedAt, language)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Card>
    </>
  );
}

const dayOf = (dayMs: number) => new Date(dayMs).toISOString().slice(0, 10);

/** The rate by day; the svg carries a title and description, and the history table is its text equivalent. */
function FxChart({ points }: { points: FxPoint[] }) {
  const { t, language } = useI18n();
  const captionId = useId();
  const rates = points.map((point) => point.rate);
  // A little room above and below, so a flat history is a visible line rather than an edge.
  const padding = Math.max(1, (Math.max(...rates) - Math.min(...rates)) * 0.1);
  return (
    <figure className="card chart" data-testid="fx-chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <h2>{t("fxChart")}</h2>
      </figcaption>
      <ResponsiveContainer width="100%" height={260}>
        <LineChart
          data={points}
          margin={{ left: 12, right: 24 }}
          title={t("fxChart")}
          desc={t("fxChartDescription")}
          accessibilityLayer
        >
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis
            dataKey="dayMs"
            type="number"
            scale="time"
            domain={["dataMin", "dataMax"]}
            padding={{ left: 16, right: 16 }}
            tickFormatter={(dayMs: number) => formatShortDate(dayOf(dayMs), language)}
            minTickGap={24}
          />
          <YAxis
            width={80}
            domain={[
              Math.floor((Math.min(...rates) - padding) / 10) * 10,
              Math.ceil((Math.max(...rates) + padding) / 10) * 10,
            ]}
            tickFormatter={(value: number) => formatDecimal(String(value))}
          />
          <Tooltip
            formatter={(_value, _name, item) => [
              `${formatDecimal((item.payload as FxPoint).rateText)} (${(item.payload as FxPoint).source})`,
              "KRW/USD",
            ]}
            labelFormatter={(dayMs) => formatShortDate(dayOf(Number(dayMs)), language)}
          />
          <Line type="stepAfter" dataKey="rate" stroke="#1d4ed8" dot={{ r: 3 }} isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </figure>
  );
}
