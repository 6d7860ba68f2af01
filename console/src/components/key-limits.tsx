import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import type { KeyLimits, ShownKeyLimitsView } from "../lib/api";
import { optionalFieldText } from "../lib/form-fields";
import { formatCount, formatWon } from "../lib/format";
import { useI18n } from "../lib/i18n";
import { ErrorMessage, useModalDialog } from "./ui";

/**
 * A key's limits and its spend this Seoul month, as one table cell; no spend line where the reader may not
 * see it (another member's key).
 */
export function KeyLimitsSummary({ view, testId }: { view: ShownKeyLimitsView; testId: string }) {
  const { t } = useI18n();
  const { limits, spend } = view;
  const parts = [
    limits.monthlySpendLimitWon === null
      ? null
      : `${formatWon(limits.monthlySpendLimitWon)} ${t("perMonth")}`,
    limits.totalSpendLimitWon === null ? null : `${formatWon(limits.totalSpendLimitWon)} ${t("inTotal")}`,
    limits.rateLimitRequestsPerMinute === null
      ? null
      : `${formatCount(limits.rateLimitRequestsPerMinute)} ${t("perMinute")}`,
    limits.allowedModels === null ? null : `${t("onlyModels")}: ${limits.allowedModels.join(", ")}`,
  ].filter((part) => part !== null);
  return (
    <div data-testid={testId}>
      <div>{parts.length === 0 ? <span className="muted">{t("noLimits")}</span> : parts.join(" · ")}</div>
      {spend === null ? null : (
        <div className="muted">
          {t("spendThisMonth")} ({spend.month}): <span className="number">{formatWon(spend.monthWon)}</span>
        </div>
      )}
    </div>
  );
}

/** The models an AllowedModelsField of a submitted form allows: none ticked is every model (null). */
export function allowedModelsOf(form: FormData): string[] | null {
  const allowedModels = form.getAll("allowedModels").map(String);
  return allowedModels.length === 0 ? null : allowedModels;
}

/** The limits a submitted form states; an empty field is no limit, no model ticked is every model. */
function limitsOf(form: FormData): KeyLimits {
  const rate = optionalFieldText(form, "rateLimitRequestsPerMinute");
  return {
    monthlySpendLimitWon: optionalFieldText(form, "monthlySpendLimitWon") ?? null,
    totalSpendLimitWon: optionalFieldText(form, "totalSpendLimitWon") ?? null,
    rateLimitRequestsPerMinute: rate === undefined ? null : Number(rate),
    allowedModels: allowedModelsOf(form),
  };
}

/** A model of the catalog the form offers, with its family (a family word allows all of its models). */
export interface ModelChoice {
  slug: string;
  family: string;
}

export interface KeyLimitsDialogProps {
  keyName: string | null;
  limits: KeyLimits | null;
  /** The catalog's models; undefined while they load (the form waits for them) or when they failed to. */
  models: readonly ModelChoice[] | undefined;
  /** Why the models failed to load, if they did. */
  modelsError: unknown;
  saving: boolean;
  error: unknown;
  onSave(limits: KeyLimits): void;
  onClear(): void;
  onClose(): void;
}

/**
 * Sets or clears a key's limits; the server validates (400/100 naming the field) and its message is shown.
 * Empty fields are no limit: the form states the key's whole set of limits, as `PUT …/limits` does.
 */
export function KeyLimitsDialog(props: KeyLimitsDialogProps) {
  const { t } = useI18n();
  const dialog = useModalDialog(props.keyName !== null);
  return (
    <dialog ref={dialog} onCancel={props.onClose} aria-labelledby="key-limits-title">
      {props.keyName !== null && props.limits && props.models && (
        // Keyed by the key: another key's dialog starts from that key's limits.
        <KeyLimitsForm
          {...props}
          key={props.keyName}
          keyName={props.keyName}
          limits={props.limits}
          models={props.models}
        />
      )}
      {props.keyName !== null && !props.models && (
        <ModelsAwaited
          title={`${t("setLimits")}: ${props.keyName}`}
          titleId="key-limits-title"
          error={props.modelsError}
          onClose={props.onClose}
        />
      )}
    </dialog>
  );
}

/**
 * A dialog with models to tick before its form can be shown: the models loading, or why they failed, and a
 * way out. `titleId` is the id the dialog is labelled by, as its form's title has it.
 */
export function ModelsAwaited(props: { title: string; titleId: string; error: unknown; onClose(): void }) {
  const { t } = useI18n();
  return (
    <div className="limits-form">
      <h2 id={props.titleId}>{props.title}</h2>
      {props.error ? <ErrorMessage error={props.error} /> : <p>{t("loading")}</p>}
      <div className="row">
        <button type="button" onClick={props.onClose}>
          {t("cancel")}
        </button>
      </div>
    </div>
  );
}

function KeyLimitsForm(
  props: KeyLimitsDialogProps & { keyName: string; limits: KeyLimits; models: readonly ModelChoice[] },
) {
  const { t } = useI18n();
  const { limits } = props;
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    props.onSave(limitsOf(new FormData(event.currentTarget)));
  }
  return (
    <form onSubmit={onSubmit} className="limits-form">
      <h2 id="key-limits-title">
        {t("setLimits")}: {props.keyName}
      </h2>
      <p className="muted">{t("limitsHelp")}</p>
      <LimitField
        label={t("monthlySpendLimit")}
        name="monthlySpendLimitWon"
        value={limits.monthlySpendLimitWon}
      />
      <LimitField label={t("totalSpendLimit")} name="totalSpendLimitWon" value={limits.totalSpendLimitWon} />
      <LimitField
        label={t("rateLimit")}
        name="rateLimitRequestsPerMinute"
        value={limits.rateLimitRequestsPerMinute}
      />
      <AllowedModelsField models={props.models} allowed={limits.allowedModels} />
      <ErrorMessage error={props.error} />
      <div className="row">
        <button type="button" onClick={props.onClose}>
          {t("cancel")}
        </button>
        <button type="button" className="danger" disabled={props.saving} onClick={props.onClear}>
          {t("clearLimits")}
        </button>
        <button type="submit" className="primary" disabled={props.saving}>
          {t("saveLimits")}
        </button>
      </div>
    </form>
  );
}

/**
 * The models a key may call (a key's, or those an organization's new keys start with), as checkboxes grouped
 * by family: a family's own box allows every model of it (those added later too) and sends `<family>/*`, a
 * model's box that model and sends its slug (a word naming both, `epsilon`, is the model:
 * src/keys/allowed-models.ts). Nothing ticked: every model (allowedModelsOf reads it back).
 */
export function AllowedModelsField(props: {
  models: readonly ModelChoice[];
  allowed: readonly string[] | null;
}) {
  const { t } = useI18n();
  const families = [...new Set(props.models.map((model) => model.family))];
  const ticked = (entry: string) => props.allowed?.includes(entry) ?? false;
  const isSlug = (word: string) => props.models.some((model) => model.slug === word);
  // A family saved before `<family>/*` existed is its bare word, unless that word is also a model's slug.
  const familyTicked = (family: string) => ticked(`${family}/*`) || (ticked(family) && !isSlug(family));
  return (
    <fieldset className="allowed-models" data-testid="allowed-models">
      <legend>{t("allowedModels")}</legend>
      <p className="muted">{t("allowedModelsHelp")}</p>
      {families.map((family) => (
        <div key={family} className="model-family">
          <label className="check">
            <input
              type="checkbox"
              name="allowedModels"
              value={`${family}/*`}
              defaultChecked={familyTicked(family)}
            />
            <span>
              <strong>{family}</strong> · {t("wholeFamily")}
            </span>
          </label>
          {props.models
            .filter((model) => model.family === family)
            .map((model) => (
              <label key={model.slug} className="check">
                <input
                  type="checkbox"
                  name="allowedModels"
                  value={model.slug}
                  defaultChecked={ticked(model.slug)}
                />
                <span>{model.slug}</span>
              </label>
            ))}
        </div>
      ))}
    </fieldset>
  );
}

/** Won limits take at most two decimals; the rate limit is a whole number of requests above zero. */
function LimitField(props: {
  label: string;
  name: Exclude<keyof KeyLimits, "allowedModels">;
  value: string | number | null;
}) {
  const isRate = props.name === "rateLimitRequestsPerMinute";
  return (
    <label>
      {props.label}
      <input
        name={props.name}
        inputMode={isRate ? "numeric" : "decimal"}
        pattern={isRate ? "[1-9]\\d*" : "\\d+(\\.\\d{1,2})?"}
        defaultValue={props.value ?? ""}
      />
    </label>
  );
}

type LimitedKey = { uuid: string; name: string; limits: KeyLimits };

/**
 * Which key's limits dialog is open, and the save or clear that closes it once it succeeds: the keys page
 * writes the session's own keys, the accounts page any key.
 */
export function useKeyLimitsEditor<Key extends LimitedKey>(write: {
  set(uuid: string, limits: KeyLimits): Promise<unknown>;
  clear(uuid: string): Promise<unknown>;
  onSaved(): void;
  /** The catalog's models, for the allowed models' checkboxes, and why they failed to load, if they did. */
  models: readonly ModelChoice[] | undefined;
  modelsError: unknown;
}) {
  const [editing, setEditing] = useState<Key | null>(null);
  const save = useMutation({
    mutationFn: ({ key, limits }: { key: Key; limits: KeyLimits | null }) =>
      limits === null ? write.clear(key.uuid) : write.set(key.uuid, limits),
    onSuccess: () => {
      setEditing(null);
      write.onSaved();
    },
  });
  const open = (key: Key) => {
    save.reset();
    setEditing(key);
  };
  const dialogProps: KeyLimitsDialogProps = {
    keyName: editing?.name ?? null,
    limits: editing?.limits ?? null,
    models: write.models,
    modelsError: write.modelsError,
    saving: save.isPending,
    error: save.error,
    onSave: (limits) => editing && save.mutate({ key: editing, limits }),
    onClear: () => editing && save.mutate({ key: editing, limits: null }),
    onClose: () => setEditing(null),
  };
  return { open, dialogProps };
}
