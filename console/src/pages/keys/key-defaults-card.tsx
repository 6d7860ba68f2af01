import type { FormEvent } from "react";
import {
  AllowedModelsField,
  allowedModelsOf,
  type ModelChoice,
  ModelsAwaited,
} from "../../components/key-limits";
import { Card, ErrorMessage, useModalDialog } from "../../components/ui";
import { useI18n } from "../../lib/i18n";
import { useKeyDefaults } from "./use-key-defaults";

interface ModelCatalog {
  /** The catalog's models; undefined while they load or when they failed to. */
  models: readonly ModelChoice[] | undefined;
  modelsError: unknown;
}

/**
 * The models the organization's keys issued from now on start with (docs/billing.md, "An organization's
 * default for its new keys"). Every member reads them; owners and admins set and clear them (C14), so the
 * others are told who does. `maySet` is undefined until the session's role is read.
 */
export function KeyDefaultsCard(props: ModelCatalog & { maySet: boolean | undefined }) {
  const { t } = useI18n();
  const defaults = useKeyDefaults();
  const allowed = defaults.read.data?.allowedModels;
  return (
    <Card title={t("keyDefaultsTitle")}>
      <p className="muted">{t("keyDefaultsHelp")}</p>
      {allowed !== undefined && (
        <p data-testid="key-defaults">
          {allowed === null ? (
            t("keyDefaultsEvery")
          ) : (
            <>
              {t("keyDefaultsOnly")} <strong>{allowed.join(", ")}</strong>
            </>
          )}
        </p>
      )}
      <ErrorMessage error={defaults.read.error} />
      {props.maySet === true && allowed !== undefined && (
        <button type="button" onClick={defaults.open}>
          {t("setKeyDefaults")}
        </button>
      )}
      {props.maySet === false && <p className="muted">{t("keyDefaultsOwnersOnly")}</p>}
      <KeyDefaultsDialog
        open={defaults.editing && allowed !== undefined}
        allowed={allowed ?? null}
        models={props.models}
        modelsError={props.modelsError}
        saving={defaults.save.isPending}
        error={defaults.save.error}
        onSave={(allowedModels) => defaults.save.mutate(allowedModels)}
        onClose={defaults.close}
      />
    </Card>
  );
}

/** As a key's limits dialog, with its models alone: nothing ticked (or Clear) is every model. */
function KeyDefaultsDialog(
  props: ModelCatalog & {
    open: boolean;
    allowed: readonly string[] | null;
    saving: boolean;
    error: unknown;
    onSave(allowedModels: string[] | null): void;
    onClose(): void;
  },
) {
  const { t } = useI18n();
  const dialog = useModalDialog(props.open);
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    props.onSave(allowedModelsOf(new FormData(event.currentTarget)));
  }
  return (
    <dialog ref={dialog} onCancel={props.onClose} aria-labelledby="key-defaults-title">
      {/* Shown only while open: each opening starts from the defaults as they are then. */}
      {props.open && props.models && (
        <form onSubmit={onSubmit} className="limits-form">
          <h2 id="key-defaults-title">{t("keyDefaultsTitle")}</h2>
          <AllowedModelsField models={props.models} allowed={props.allowed} />
          <ErrorMessage error={props.error} />
          <div className="row">
            <button type="button" onClick={props.onClose}>
              {t("cancel")}
            </button>
            <button
              type="button"
              className="danger"
              disabled={props.saving}
              onClick={() => props.onSave(null)}
            >
              {t("clearKeyDefaults")}
            </button>
            <button type="submit" className="primary" disabled={props.saving}>
              {t("saveKeyDefaults")}
            </button>
          </div>
        </form>
      )}
      {props.open && !props.models && (
        <ModelsAwaited
          title={t("keyDefaultsTitle")}
          titleId="key-defaults-title"
          error={props.modelsError}
          onClose={props.onClose}
        />
      )}
    </dialog>
  );
}
