import type { FormEvent } from "react";
import { ErrorMessage } from "../../components/ui";
import { formatChargeWon, formatCount } from "../../lib/format";
import { useI18n } from "../../lib/i18n";
import type { Turn, usePlaygroundChat } from "./use-playground-chat";

type Chat = ReturnType<typeof usePlaygroundChat>;

/** The turns so far, the message box, and New chat / Send / Stop. */
export function Conversation({ chat, ready }: { chat: Chat; ready: boolean }) {
  const { t } = useI18n();
  return (
    <section className="card" aria-label={t("conversation")}>
      <div className="row spread">
        <h2>{t("conversation")}</h2>
        <button type="button" onClick={chat.clear} disabled={chat.streaming || chat.turns.length === 0}>
          {t("newChat")}
        </button>
      </div>
      <ol className="conversation" data-testid="conversation">
        {chat.turns.map((turn, index) => (
          <TurnItem
            // Turns are only appended or cleared: the index is stable.
            // biome-ignore lint/suspicious/noArrayIndexKey: see above
            key={index}
            turn={turn}
          />
        ))}
      </ol>
      <MessageForm chat={chat} ready={ready} />
      <ErrorMessage error={chat.error} />
    </section>
  );
}

function TurnItem({ turn }: { turn: Turn }) {
  const { t } = useI18n();
  return (
    <li
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
  );
}

/**
 * Sending needs the playground key; the box empties once the message is on its way, and gets the message
 * back when the request is refused before any reply (unless something else was typed meanwhile).
 */
function MessageForm({ chat, ready }: { chat: Chat; ready: boolean }) {
  const { t } = useI18n();
  function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const box = form.elements.namedItem("message") as HTMLTextAreaElement;
    const message = box.value.trim();
    if (!message || !ready) return;
    void chat.send(message).then((outcome) => {
      if (outcome === "refused" && box.value === "") box.value = message;
    });
    form.reset();
  }
  return (
    <form onSubmit={onSubmit} className="stack">
      <label>
        {t("message")}
        <textarea name="message" rows={3} required />
      </label>
      <div className="row">
        <button type="submit" className="primary" disabled={chat.streaming || !ready}>
          {t("send")}
        </button>
        <button type="button" onClick={chat.stop} disabled={!chat.streaming}>
          {t("stop")}
        </button>
      </div>
    </form>
  );
}
