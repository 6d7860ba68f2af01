import { KeyLimitsSummary } from "../../components/key-limits";
import type { ApiKey } from "../../lib/api";
import { formatSeoulDateTime } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import { systemText } from "../../lib/system-text";
import type { PendingKeyAction } from "./use-keys";

interface KeyActions {
  /** Left out where the session's role may not set the key's limits: no button then. */
  onSetLimits: ((key: ApiKey) => void) | undefined;
  onAction(action: PendingKeyAction): void;
}

export function KeysTable({ keys, ...actions }: { keys: readonly ApiKey[] } & KeyActions) {
  const { t } = useI18n();
  return (
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
          {keys.map((key) => (
            <KeyRow key={key.uuid} apiKey={key} {...actions} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function KeyRow({ apiKey: key, ...actions }: { apiKey: ApiKey } & KeyActions) {
  const { t, language } = useI18n();
  return (
    <tr data-testid={`key-row-${key.name}`}>
      <td>
        {systemText(key.name, language)}
        {key.description ? <div className="muted">{systemText(key.description, language)}</div> : null}
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
        <KeyRowActions apiKey={key} {...actions} />
      </td>
    </tr>
  );
}

/** An active key can be deactivated, an inactive one reactivated; either can be deleted. */
function KeyRowActions({ apiKey: key, onSetLimits, onAction }: { apiKey: ApiKey } & KeyActions) {
  const { t, language } = useI18n();
  const toggle = key.status === 1 ? "deactivate" : "reactivate";
  // Every row has the same buttons: the key's name, for assistive technology only, tells them apart.
  const forThisKey = <span className="visually-hidden">{systemText(key.name, language)}</span>;
  return (
    <div className="row">
      {onSetLimits && (
        <button type="button" onClick={() => onSetLimits(key)}>
          {t("setLimits")} {forThisKey}
        </button>
      )}
      <button type="button" onClick={() => onAction({ key, action: toggle })}>
        {t(toggle)} {forThisKey}
      </button>
      <button type="button" className="danger" onClick={() => onAction({ key, action: "delete" })}>
        {t("delete")} {forThisKey}
      </button>
    </div>
  );
}
