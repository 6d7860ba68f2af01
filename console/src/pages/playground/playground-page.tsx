import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorMessage } from "../../components/ui";
import { userApi } from "../../lib/api";
import { useI18n } from "../../lib/i18n";
import { Conversation } from "./conversation";
import { PlaygroundSettings } from "./playground-settings";
import { type ChatSettings, usePlaygroundChat } from "./use-playground-chat";

/**
 * A chat on the signed-in session: the console asks for a playground key of the session's account (the
 * previous one is replaced; it lives in this page's memory only) and streams chat completions from /llm/v1
 * with it, exactly as a client's code would — the same admission, limits, billing and activity. Every turn
 * sends the whole conversation (with the system prompt) and shows the reply's cost once it is charged.
 */

const initialSettings: ChatSettings = {
  model: "alpha-5.4-mini",
  systemPrompt: "",
  temperature: "1",
  maxTokens: "",
};

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
  const [settings, setSettings] = useState(initialSettings);
  const chat = usePlaygroundChat({ key: key.data, isOrganization, settings });
  return (
    <>
      <h1>{t("navPlayground")}</h1>
      <p className="muted">{t("playgroundHelp")}</p>
      <ErrorMessage error={key.error ?? models.error} />
      <PlaygroundSettings
        scope={{ isOrganization, hasOrganization, onChange: setIsOrganization }}
        streaming={chat.streaming}
        models={models.data?.data}
        settings={settings}
        onChange={(change) => setSettings((current) => ({ ...current, ...change }))}
      />
      <Conversation chat={chat} ready={Boolean(key.data)} />
    </>
  );
}
