import { type FormEvent, useRef, useState } from "react";
import { Card, ErrorMessage } from "../components/ui";
import { formatCount } from "../lib/format";
import { useI18n } from "../lib/i18n";
import { takeSseData } from "../lib/sse";

/**
 * Streams a chat completion with a key the user pastes. The key lives in component state only (never storage,
 * never the server's session) and goes only to the gateway's own /llm/v1, as `Authorization: Bearer`.
 */

interface ChunkUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export function PlaygroundPage() {
  const { t } = useI18n();
  const [apiKey, setApiKey] = useState("");
  const [models, setModels] = useState<string[]>([]);
  const [model, setModel] = useState("alpha-5.4-mini");
  const [reply, setReply] = useState("");
  const [usage, setUsage] = useState<ChunkUsage | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [streaming, setStreaming] = useState(false);
  const abort = useRef<AbortController | null>(null);

  async function loadModels() {
    setError(null);
    try {
      const response = await fetch("/llm/v1/models", { headers: { authorization: `Bearer ${apiKey}` } });
      const body = (await response.json()) as { data?: { id: string }[]; message?: string };
      if (!response.ok) throw new Error(body.message ?? response.statusText);
      const ids = (body.data ?? []).map((entry) => entry.id);
      setModels(ids);
      if (ids.length > 0 && !ids.includes(model)) setModel(ids[0]!);
    } catch (caught) {
      setError(caught);
    }
  }

  async function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const message = String(new FormData(event.currentTarget).get("message") ?? "");
    setReply("");
    setUsage(null);
    setError(null);
    setStreaming(true);
    const controller = new AbortController();
    abort.current = controller;
    try {
      const response = await fetch("/llm/v1/chat/completions", {
        method: "POST",
        signal: controller.signal,
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: message }] }),
      });
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
            usage?: ChunkUsage;
          };
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) setReply((text) => text + delta);
          if (chunk.usage) setUsage(chunk.usage);
        }
      }
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
      <Card title={t("navPlayground")}>
        <form onSubmit={(event) => void send(event)} className="stack">
          <div className="row wrap">
            <label>
              {t("apiKey")}
              <input
                type="password"
                autoComplete="off"
                spellCheck={false}
                value={apiKey}
                onChange={(event) => setApiKey(event.target.value)}
                placeholder="svc_…"
                required
              />
            </label>
            <button type="button" onClick={() => void loadModels()} disabled={!apiKey}>
              {t("loadModels")}
            </button>
            <label>
              {t("model")}
              <select value={model} onChange={(event) => setModel(event.target.value)}>
                {(models.length > 0 ? models : [model]).map((id) => (
                  <option key={id} value={id}>
                    {id}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <label>
            {t("message")}
            <textarea name="message" rows={3} required />
          </label>
          <div className="row">
            <button type="submit" className="primary" disabled={streaming}>
              {t("send")}
            </button>
            <button type="button" onClick={() => abort.current?.abort()} disabled={!streaming}>
              {t("stop")}
            </button>
          </div>
        </form>
        <ErrorMessage error={error} />
        <h3>{t("reply")}</h3>
        <output className="reply" data-testid="playground-reply" aria-live="polite">
          {reply}
        </output>
        {usage && (
          <p className="muted" data-testid="playground-usage">
            {t("usage")}: {t("inputTokens")} {formatCount(usage.prompt_tokens)} · {t("outputTokens")}{" "}
            {formatCount(usage.completion_tokens)}
          </p>
        )}
      </Card>
    </>
  );
}
