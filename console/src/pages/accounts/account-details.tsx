import { useQuery, useQueryClient } from "@tanstack/react-query";
import { KeyLimitsDialog, KeyLimitsSummary, useKeyLimitsEditor } from "../../components/key-limits";
import { Card, ErrorMessage } from "../../components/ui";
import { type AccountKeyRow, adminApi, type UnpriceablePending } from "../../lib/api";
import { formatCount, formatSeoulDateTime, formatWon } from "../../lib/format";
import { type MessageKey, useI18n } from "../../lib/i18n";

export type AccountRef = { kind: string; id: string };

/** One account's funds and keys once its funds are read, or why they could not be. */
export function AccountDetails({ account }: { account: AccountRef }) {
  const { t } = useI18n();
  const view = useQuery({
    queryKey: ["admin", "account", account],
    queryFn: () => adminApi.account(account.kind, account.id),
  });
  if (view.isPending) return null;
  return (
    <Card title={`${account.kind}:${account.id}`}>
      <ErrorMessage error={view.error} />
      {view.data && (
        <>
          <p data-testid="account-funds">
            {t("balance")}: <strong>{formatWon(view.data.balanceWon)}</strong> · {t("held")}:{" "}
            {formatWon(view.data.heldWon)} · {t("pending")}: {formatWon(view.data.pendingWon)}
          </p>
          {view.data.unpriceablePending.length > 0 && (
            <UnpriceablePendingTable rows={view.data.unpriceablePending} />
          )}
          <AccountKeys kind={account.kind} id={account.id} />
        </>
      )}
    </Card>
  );
}

const unpriceableReasons: Record<UnpriceablePending["reason"], MessageKey> = {
  "unknown-model": "unpriceableUnknownModel",
  "no-fx-rate": "unpriceableNoFxRate",
};

/** Pending usage the reconciler cannot charge, per model: what price or rate an admin has to record. */
function UnpriceablePendingTable({ rows }: { rows: readonly UnpriceablePending[] }) {
  const { t, language } = useI18n();
  return (
    <>
      <p className="warning" role="status">
        {t("unpriceablePending")}
      </p>
      <div className="table-scroll">
        <table data-testid="unpriceable-pending">
          <thead>
            <tr>
              <th scope="col">{t("model")}</th>
              <th scope="col">{t("reason")}</th>
              <th scope="col">{t("requests")}</th>
              <th scope="col">{t("oldestStart")}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={`${row.model} ${row.reason}`}>
                <td>{row.model}</td>
                <td>{t(unpriceableReasons[row.reason])}</td>
                <td className="number">{formatCount(row.requests)}</td>
                <td>{formatSeoulDateTime(row.oldestStartedAt, language)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** An account's keys with their limits and month's spend; an admin may set any key's limits. */
function AccountKeys({ kind, id }: AccountRef) {
  const { t } = useI18n();
  const client = useQueryClient();
  const keys = useQuery({
    queryKey: ["admin", "account-keys", kind, id],
    queryFn: () => adminApi.accountKeys(kind, id),
  });
  const models = useQuery({
    queryKey: ["admin", "prices"],
    queryFn: adminApi.prices,
    select: (prices) => prices.data.map((row) => ({ slug: row.model, family: row.family })),
  });
  const limitsEditor = useKeyLimitsEditor<AccountKeyRow>({
    set: adminApi.setKeyLimits,
    clear: adminApi.clearKeyLimits,
    onSaved: () => void client.invalidateQueries({ queryKey: ["admin", "account-keys", kind, id] }),
    models: models.data,
    modelsError: models.error,
  });
  const rows = keys.data?.data;
  return (
    <>
      <h3>{t("keys")}</h3>
      <ErrorMessage error={keys.error} />
      {rows && rows.length === 0 && <p>{t("noAccountKeys")}</p>}
      {rows && rows.length > 0 && <AccountKeysTable keys={rows} onSetLimits={limitsEditor.open} />}
      <KeyLimitsDialog {...limitsEditor.dialogProps} />
    </>
  );
}

function AccountKeysTable(props: { keys: readonly AccountKeyRow[]; onSetLimits(key: AccountKeyRow): void }) {
  const { t } = useI18n();
  return (
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
          {props.keys.map((key) => (
            <tr key={key.uuid}>
              <td>
                {key.name} <code>{key.keyPreview}</code>
              </td>
              <td>{key.status === 1 ? t("active") : t("inactive")}</td>
              <td>
                <KeyLimitsSummary view={key} testId={`admin-key-limits-${key.name}`} />
              </td>
              <td>
                <button type="button" onClick={() => props.onSetLimits(key)}>
                  {t("setLimits")} <span className="visually-hidden">{key.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
