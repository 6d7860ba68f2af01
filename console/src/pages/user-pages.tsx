import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { KeyLimitsDialog, KeyLimitsSummary } from "../components/key-limits";
import { Card, ConfirmDialog, ErrorMessage } from "../components/ui";
import { type AccountFunds, type ApiKey, type KeyLimits, type NewApiKey, userApi } from "../lib/api";
import { formatSeoulDateTime, formatWon } from "../lib/format";
import { useI18n } from "../lib/i18n";

export function OverviewPage() {
  const { t } = useI18n();
  // Charges, holds and top-ups land while the page is open: the balance is read again every few seconds.
  const balance = useQuery({ queryKey: ["balance"], queryFn: userApi.balance, refetchInterval: 5_000 });
  return (
    <>
      <h1>{t("navOverview")}</h1>
      <ErrorMessage error={balance.error} />
      <div className="grid">
        <Card title={t("personalBalance")}>
          {balance.data ? (
            <FundsFigures funds={balance.data.user} testId="personal-balance" />
          ) : (
            <p>{t("loading")}</p>
          )}
        </Card>
        <Card title={t("organizationBalance")}>
          {balance.data?.organization ? (
            <FundsFigures funds={balance.data.organization} testId="organization-balance" />
          ) : (
            <p>{balance.data ? t("noOrganization") : t("loading")}</p>
          )}
        </Card>
      </div>
    </>
  );
}

/** The balance, and beside it what is held by requests in flight and pending (recorded, not charged). */
function FundsFigures({ funds, testId }: { funds: AccountFunds; testId: string }) {
  const { t } = useI18n();
  return (
    <>
      <p className="figure" data-testid={testId}>
        {formatWon(funds.balanceWon)}
      </p>
      <dl className="funds">
        <dt title={t("heldHelp")}>{t("held")}</dt>
        <dd data-testid={`${testId}-held`}>{formatWon(funds.heldWon)}</dd>
        <dt title={t("pendingHelp")}>{t("pending")}</dt>
        <dd data-testid={`${testId}-pending`}>{formatWon(funds.pendingWon)}</dd>
      </dl>
    </>
  );
}

type PendingAction = { key: ApiKey; action: "deactivate" | "reactivate" | "delete" };

export function KeysPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t, language } = useI18n();
  const client = useQueryClient();
  const [isOrganization, setIsOrganization] = useState(false);
  const [issued, setIssued] = useState<NewApiKey | null>(null);
  const [copied, setCopied] = useState(false);
  const [pending, setPending] = useState<PendingAction | null>(null);
  const [limiting, setLimiting] = useState<ApiKey | null>(null);
  const keys = useQuery({
    queryKey: ["keys", isOrganization],
    queryFn: () => userApi.keys(isOrganization),
  });
  const refresh = () => client.invalidateQueries({ queryKey: ["keys"] });
  const issue = useMutation({
    mutationFn: userApi.issueKey,
    onSuccess: (key) => {
      setIssued(key);
      setCopied(false);
      void refresh();
    },
  });
  const change = useMutation({
    mutationFn: async ({ key, action }: PendingAction) => {
      if (action === "delete") await userApi.deleteKey(key.uuid);
      else await userApi.setKeyStatus(key.uuid, action === "reactivate" ? 1 : 0);
    },
    onSettled: () => void refresh(),
  });
  const limit = useMutation({
    mutationFn: ({ key, limits }: { key: ApiKey; limits: KeyLimits | null }) =>
      limits === null ? userApi.clearKeyLimits(key.uuid) : userApi.setKeyLimits(key.uuid, limits),
    onSuccess: () => {
      setLimiting(null);
      void refresh();
    },
  });

  function onIssue(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    issue.mutate({
      name: String(form.get("name") ?? ""),
      description: String(form.get("description") ?? ""),
      isOrganization,
    });
    event.currentTarget.reset();
  }

  async function copy() {
    if (!issued) return;
    await navigator.clipboard.writeText(issued.key);
    setCopied(true);
  }

  return (
    <>
      <h1>{t("navKeys")}</h1>
      <fieldset className="segmented">
        <legend>{t("scope")}</legend>
        <label>
          <input
            type="radio"
            name="scope"
            checked={!isOrganization}
            onChange={() => setIsOrganization(false)}
          />
          {t("personal")}
        </label>
        <label>
          <input
            type="radio"
            name="scope"
            checked={isOrganization}
            disabled={!hasOrganization}
            onChange={() => setIsOrganization(true)}
          />
          {t("organization")}
        </label>
      </fieldset>

      <Card title={t("issueKey")}>
        <form onSubmit={onIssue} className="row wrap">
          <label>
            {t("keyName")}
            <input name="name" required maxLength={200} />
          </label>
          <label>
            {t("keyDescription")}
            <input name="description" maxLength={2000} />
          </label>
          <button type="submit" className="primary" disabled={issue.isPending}>
            {t("issue")}
          </button>
        </form>
        <ErrorMessage error={issue.error} />
      </Card>

      {issued && (
        <section className="card new-key" aria-labelledby="new-key-title">
          <h2 id="new-key-title">{t("newKeyTitle")}</h2>
          <p role="alert" className="warning">
            {t("newKeyWarning")}
          </p>
          <div className="row">
            <code data-testid="new-key-value">{issued.key}</code>
            <button type="button" onClick={() => void copy()}>
              {copied ? t("copied") : t("copy")}
            </button>
            <button type="button" onClick={() => setIssued(null)}>
              {t("done")}
            </button>
          </div>
        </section>
      )}

      <ErrorMessage error={keys.error ?? change.error} />
      {keys.data && keys.data.data.length === 0 && <p>{t("noKeys")}</p>}
      {keys.data && keys.data.data.length > 0 && (
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">{t("keyName")}</th>
                <th scope="col">{t("keyPreview")}</th>
                <th scope="col">{t("status")}</th>
                <th scope="col">{t("limits")}</th>
                <th scope="col">{t("created")}</th>
                <th scope="col">{t("actions")}</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((key) => (
                <tr key={key.uuid} data-testid={`key-row-${key.name}`}>
                  <td>
                    {key.name}
                    {key.description ? <div className="muted">{key.description}</div> : null}
                  </td>
                  <td>
                    <code>{key.keyPreview}</code>
                  </td>
                  <td>
                    <span className={key.status === 1 ? "badge ok" : "badge off"}>
                      {key.status === 1 ? t("active") : t("inactive")}
                    </span>
                  </td>
                  <td>
                    <KeyLimitsSummary view={key} testId={`key-limits-${key.name}`} />
                  </td>
                  <td>{formatSeoulDateTime(key.createdAt, language)}</td>
                  <td>
                    <div className="row">
                      <button
                        type="button"
                        onClick={() => {
                          limit.reset();
                          setLimiting(key);
                        }}
                      >
                        {t("setLimits")} <span className="visually-hidden">{key.name}</span>
                      </button>
                      {key.status === 1 ? (
                        <button type="button" onClick={() => setPending({ key, action: "deactivate" })}>
                          {t("deactivate")}
                        </button>
                      ) : (
                        <button type="button" onClick={() => setPending({ key, action: "reactivate" })}>
                          {t("reactivate")}
                        </button>
                      )}
                      <button
                        type="button"
                        className="danger"
                        onClick={() => setPending({ key, action: "delete" })}
                      >
                        {t("delete")}
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog
        open={pending !== null}
        message={
          pending
            ? `${pending.key.name}: ${t(
                pending.action === "delete"
                  ? "confirmDelete"
                  : pending.action === "deactivate"
                    ? "confirmDeactivate"
                    : "confirmReactivate",
              )}`
            : ""
        }
        confirmLabel={pending ? t(pending.action) : t("confirm")}
        danger={pending?.action !== "reactivate"}
        onCancel={() => setPending(null)}
        onConfirm={() => {
          if (pending) change.mutate(pending);
          setPending(null);
        }}
      />
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
