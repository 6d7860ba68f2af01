import { ScopeSelect } from "../../components/scope-select";
import { Card } from "../../components/ui";
import type { PricedModel } from "../../lib/api";
import { formatWon } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import type { ChatSettings } from "./use-playground-chat";

/** The account, model and sampling settings of the next message, and the system prompt before it. */
export function PlaygroundSettings(props: {
  scope: { isOrganization: boolean; hasOrganization: boolean; onChange(isOrganization: boolean): void };
  streaming: boolean;
  models: readonly PricedModel[] | undefined;
  settings: ChatSettings;
  onChange(change: Partial<ChatSettings>): void;
}) {
  const { t } = useI18n();
  const { settings, onChange } = props;
  const selected = props.models?.find((entry) => entry.id === settings.model);
  return (
    <Card title={t("settings")}>
      <div className="row wrap">
        <ScopeSelect {...props.scope} disabled={props.streaming} />
        <label>
          {t("model")}
          <select value={settings.model} onChange={(event) => onChange({ model: event.target.value })}>
            {(props.models ?? [{ id: settings.model } as PricedModel]).map((entry) => (
              <option key={entry.id} value={entry.id}>
                {entry.id}
              </option>
            ))}
          </select>
        </label>
        <SamplingFields settings={settings} onChange={onChange} />
      </div>
      {selected?.pricing && <ModelPrice pricing={selected.pricing} />}
      <label>
        {t("systemPrompt")}
        <textarea
          rows={2}
          value={settings.systemPrompt}
          onChange={(event) => onChange({ systemPrompt: event.target.value })}
        />
      </label>
    </Card>
  );
}

/** Temperature and the reply's token limit; empty means the model's own default. */
function SamplingFields(props: { settings: ChatSettings; onChange(change: Partial<ChatSettings>): void }) {
  const { t } = useI18n();
  return (
    <>
      <label>
        {t("temperature")}
        <input
          type="number"
          min={0}
          max={2}
          step={0.1}
          value={props.settings.temperature}
          onChange={(event) => props.onChange({ temperature: event.target.value })}
        />
      </label>
      <label>
        {t("maxTokens")}
        <input
          type="number"
          min={1}
          step={1}
          value={props.settings.maxTokens}
          placeholder={t("noLimit")}
          onChange={(event) => props.onChange({ maxTokens: event.target.value })}
        />
      </label>
    </>
  );
}

function ModelPrice({ pricing }: { pricing: NonNullable<PricedModel["pricing"]> }) {
  const { t } = useI18n();
  return (
    <p className="muted" data-testid="playground-model-price">
      {t("inputPrice")} {formatWon(pricing.inputWonPerMillionTokens)} · {t("outputPrice")}{" "}
      {formatWon(pricing.outputWonPerMillionTokens)} {t("perMillionTokens")}
    </p>
  );
}
