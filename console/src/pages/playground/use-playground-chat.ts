import { useRef, useState } from "react";
import {
  type ChatMessage,
  type ChatUsage,
  chargedCostOf,
  type PlaygroundKey,
  streamChatCompletion,
} from "./chat-completion-stream";

export interface Turn {
  role: "user" | "assistant";
  content: string;
  /** The reply's `x-request-id`, its usage and, once charged, its cost. */
  requestId?: string;
  usage?: ChatUsage;
  costWon?: string | null;
}

export interface ChatSettings {
  model: string;
  systemPrompt: string;
  temperature: string;
  maxTokens: string;
}

/** The request body: the whole conversation after the system prompt; empty settings are left to the model. */
function chatRequestBody(settings: ChatSettings, history: readonly Turn[]) {
  const systemPrompt = settings.systemPrompt.trim();
  const messages: ChatMessage[] = [
    ...(systemPrompt ? [{ role: "system" as const, content: systemPrompt }] : []),
    ...history.map((turn) => ({ role: turn.role, content: turn.content })),
  ];
  return {
    model: settings.model,
    stream: true,
    messages,
    ...(settings.temperature ? { temperature: Number(settings.temperature) } : {}),
    ...(settings.maxTokens ? { max_tokens: Number(settings.maxTokens) } : {}),
  };
}

/** The conversation's turns; the last one is the reply being streamed. */
function useTurns() {
  const [turns, setTurns] = useState<Turn[]>([]);
  const updateReply = (change: (turn: Turn) => Turn) =>
    setTurns((current) => [...current.slice(0, -1), change(current[current.length - 1]!)]);
  const setCost = (requestId: string, costWon: string) =>
    setTurns((current) =>
      current.map((turn) => (turn.requestId === requestId ? { ...turn, costWon } : turn)),
    );
  return { turns, setTurns, updateReply, setCost };
}

/** Sends a message with the conversation so far, streams the reply into it, then shows its cost once charged. */
export function usePlaygroundChat(options: {
  key: PlaygroundKey | undefined;
  isOrganization: boolean;
  settings: ChatSettings;
}) {
  const { turns, setTurns, updateReply, setCost } = useTurns();
  const [error, setError] = useState<unknown>(null);
  const [streaming, setStreaming] = useState(false);
  const abort = useRef<AbortController | null>(null);

  /**
   * "refused": the request failed before any reply arrived (a bad parameter, no credit): the conversation is
   * as it was before the message, which the caller may offer to send again.
   */
  async function send(message: string): Promise<"sent" | "refused"> {
    const { key, isOrganization } = options;
    if (!key) return "refused";
    const before = turns;
    const history: Turn[] = [...turns, { role: "user", content: message }];
    setTurns([...history, { role: "assistant", content: "" }]);
    setError(null);
    setStreaming(true);
    const controller = new AbortController();
    abort.current = controller;
    let replied = false;
    try {
      const requestId = await streamChatCompletion(
        { key, body: chatRequestBody(options.settings, history), signal: controller.signal },
        {
          requestId: (id) => updateReply((turn) => ({ ...turn, requestId: id })),
          delta: (text) => {
            replied = true;
            updateReply((turn) => ({ ...turn, content: turn.content + text }));
          },
          usage: (usage) => {
            replied = true;
            updateReply((turn) => ({ ...turn, usage, costWon: null }));
          },
        },
      );
      if (requestId)
        void chargedCostOf(requestId, isOrganization).then((cost) => cost && setCost(requestId, cost));
      return "sent";
    } catch (caught) {
      // Stop is not an error: the reply keeps what had arrived.
      if (controller.signal.aborted) return "sent";
      setError(caught);
      if (replied) return "sent";
      // Refused before a word: no empty reply, and the message not in the history sent next time.
      setTurns(before);
      return "refused";
    } finally {
      setStreaming(false);
      abort.current = null;
    }
  }

  return { turns, error, streaming, send, stop: () => abort.current?.abort(), clear: () => setTurns([]) };
}
