import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useRef, useState } from "react";
import { Card, ErrorMessage } from "../components/ui";
import { type PricedModel, userApi } from "../lib/api";
import { formatChargeWon, formatCount, formatWon } from "../lib/format";
import { useI18n } from "../lib/i18n";
import { takeSseData } from "../lib/sse";

/**
 * A chat on the signed-in session: the console asks for a playground key of the session's account (the
 * previous one is replaced; it lives in this page's memory only) and streams chat completions from /llm/v1
 * with it, exactly as a client's code would — the same admission, limits, billing and activity. Every turn
 * sends the whole conversation (with the system prompt) and shows the reply's cost once it is charged.
 */

interface Turn {
  role: "user" | "assistant";
  content: string;
  /** The reply's `x-request-id`, its usage and, once charged, its cost. */
  requestId?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  costWon?: string | null;
}

const defaultModel = "alpha-5.4-mini";
const costPollIntervalMs = 500;
const costPollAttemptsMax = 60;

export function PlaygroundPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const [isOrganization, setIsOrganization] = useState(false);
  const key = useQuery({
    queryKey: ["playground-key", isOrganization],
    queryFn: () => userApi.playgroundKey(isOrganization),
    // One key per visit: a refetch would replace it (and delete the one a stream is using).
    staleTime: Number.POSITIVE_INFINITY,
    refetchOnWindowFocus: false,
    retry: false,
  });
  const models = useQuery({
    queryKey: ["models", isOrganization],
    queryFn: () => userApi.models(isOrganization),
  });
  const [model, setModel] = useState(defaultModel);
  const [systemPrompt, setSystemPrompt] = useState("");
  const [temperature, setTemperature] = useState("1");
  const [maxTokens, setMaxTokens] = useState("");
  const [turns, setTurns] = useState<Turn[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [streaming, setStreaming] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const selected = models.data?.data.find((entry) => entry.id === model);

  /** Updates the last turn (the reply being streamed). */
  const updateReply = (change: (turn: Turn) => Turn) =>
    setTurns((current) => [...current.slice(0, -1), change(current[current.length - 1]!)]);

  async function costOf(requestId: string): Promise<void> {
    for (let attempt = 0; attempt < costPollAttemptsMax; attempt += 1) {
      const page = await userApi.activity({ requestId }, isOrganization, { limit: 1 });
      const costWon = page.data[0]?.costWon ?? null;
      if (costWon !== null) {
        setTurns((current) =>
          current.map((turn) => (turn.requestId === requestId ? { ...turn, costWon } : turn)),
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, costPollIntervalMs));
    }
  }

  async function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const message = String(new FormData(form).get("message") ?? "").trim();
    if (!message || !key.data) return;
    const history: Turn[] = [...turns, { role: "user", content: message }];
    setTurns([...history, { role: "assistant", content: "" }]);
    form.reset();
    setError(null);
    setStreaming(true);
    const controller = new AbortController();
    abort.current = controller;
    try {
      const messages = [
        ...(systemPrompt.trim() ? [{ role: "system", content: systemPrompt.trim() }] : []),
        ...history.map((turn) => ({ role: turn.role, content: turn.content })),
      ];
      const response = await fetch(`${key.data.baseUrl}/chat/completions`, {
        method: "POST",
        signal: controller.signal,
        headers: { authorization: `Bearer ${key.data.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model,
          stream: true,
          messages,
          ...(temperature ? { temperature: Number(temperature) } : {}),
          ...(maxTokens ? { max_tokens: Number(maxTokens) } : {}),
        }),
      });
      const requestId = response.headers.get("x-request-id") ?? undefined;
      updateReply((turn) => ({ ...turn, requestId }));
      if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => ({}))) as { message?: string };
        throw new Error(body.message ?? `HTTP ${response.status}`);
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const { payloads, rest } = takeSseData(buffer + value);
        buffer = rest;
        for (const payload of payloads) {
          if (payload === "[DONE]") continue;
          const chunk = JSON.parse(payload) as {
            choices?: { delta?: { content?: string } }[];
            usage?: Turn["usage"];
          };
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) updateReply((turn) => ({ ...turn, content: turn.content + delta }));
          if (chunk.usage) {
            const usage = chunk.usage;
            updateReply((turn) => ({ ...turn, usage, costWon: null }));
          }
        }
      }
      if (requestId) void costOf(requestId);
    } catch (caught) {
      if (!controller.signal.aborted) setError(caught);
    } finally {
      setStreaming(false);
      abort.current = null;
    }
  }

  return (
    <>
      <h1>{t("navPlayground")}</h1>
      <p className="muted">{t("playgroundHelp")}</p>
      <ErrorMessage error={key.error ?? models.error} />
      <Card title={t("settings")}>
        <div className="row wrap">
          <label>
            {t("scope")}
            <select
              value={isOrganization ? "organization" : "personal"}
              onChange={(event) => setIsOrganization(event.target.value === "organization")}
              disabled={streaming}
            >
              <option value="personal">{t("personal")}</option>
              {hasOrganization && <option value="organization">{t("organization")}</option>}
            </select>
          </label>
          <label>
            {t("model")}
            <select value={model} onChange={(event) => setModel(event.target.value)}>
              {(models.data?.data ?? [{ id: model } as PricedModel]).map((entry) => (
                <option key={entry.id} value={entry.id}>
                  {entry.id}
                </option>
              ))}
            </select>
          </label>
          <label>
            {t("temperature")}
            <input
              type="number"
              min={0}
              max={2}
              step={0.1}
              value={temperature}
              onChange={(event) => setTemperature(event.target.value)}
            />
          </label>
          <label>
            {t("maxTokens")}
            <input
              type="number"
              min={1}
              step={1}
              value={maxTokens}
              placeholder={t("noLimit")}
              onChange={(event) => setMaxTokens(event.target.value)}
            />
          </label>
        </div>
        {selected?.pricing && (
          <p className="muted" data-testid="playground-model-price">
            {t("inputPrice")} {formatWon(selected.pricing.inputWonPerMillionTokens)} · {t("outputPrice")}{" "}
            {formatWon(selected.pricing.outputWonPerMillionTokens)} {t("perMillionTokens")}
          </p>
        )}
        <label>
          {t("systemPrompt")}
          <textarea rows={2} value={systemPrompt} onChange={(event) => setSystemPrompt(event.target.value)} />
        </label>
      </Card>
      <section className="card" aria-label={t("conversation")}>
        <div className="row spread">
          <h2>{t("conversation")}</h2>
          <button type="button" onClick={() => setTurns([])} disabled={streaming || turns.length === 0}>
            {t("newChat")}
          </button>
        </div>
        <ol className="conversation" data-testid="conversation">
          {turns.map((turn, index) => (
            <li
              // Turns are only appended or cleared: the index is stable.
              // biome-ignore lint/suspicious/noArrayIndexKey: see above
              key={index}
              className={`turn ${turn.role}`}
              data-testid={turn.role === "assistant" ? "playground-reply" : "playground-message"}
            >
              <span className="visually-hidden">{turn.role === "user" ? t("you") : t("assistant")}: </span>
              <div className="turn-text">{turn.content}</div>
              {turn.role === "assistant" && turn.usage && (
                <p className="muted" data-testid="playground-usage">
                  {t("inputTokens")} {formatCount(turn.usage.prompt_tokens)} · {t("outputTokens")}{" "}
                  {formatCount(turn.usage.completion_tokens)} · {t("cost")}{" "}
                  <span data-testid="playground-cost">
                    {turn.costWon ? formatChargeWon(turn.costWon) : t("costPending")}
                  </span>
                </p>
              )}
            </li>
          ))}
        </ol>
        <form onSubmit={(event) => void send(event)} className="stack">
          <label>
            {t("message")}
            <textarea name="message" rows={3} required />
          </label>
          <div className="row">
            <button type="submit" className="primary" disabled={streaming || !key.data}>
              {t("send")}
            </button>
            <button type="button" onClick={() => abort.current?.abort()} disabled={!streaming}>
              {t("stop")}
            </button>
          </div>
        </form>
        <ErrorMessage error={error} />
      </section>
    </>
  );
}
