import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useKeyLimitsEditor } from "../../components/key-limits";
import { type ApiKey, type NewApiKey, userApi } from "../../lib/api";

export type KeyAction = "deactivate" | "reactivate" | "delete";
export type PendingKeyAction = { key: ApiKey; action: KeyAction };

/** The keys of the chosen account and what the page does to them; every change reads the list again. */
export function useKeys() {
  const client = useQueryClient();
  const [isOrganization, setIsOrganization] = useState(false);
  const [issued, setIssued] = useState<NewApiKey | null>(null);
  const list = useQuery({
    queryKey: ["keys", isOrganization],
    queryFn: () => userApi.keys(isOrganization),
  });
  const refresh = () => client.invalidateQueries({ queryKey: ["keys"] });
  const issue = useMutation({
    mutationFn: userApi.issueKey,
    onSuccess: (key) => {
      setIssued(key);
      void refresh();
    },
  });
  const change = useMutation({
    mutationFn: async ({ key, action }: PendingKeyAction) => {
      if (action === "delete") await userApi.deleteKey(key.uuid);
      else await userApi.setKeyStatus(key.uuid, action === "reactivate" ? 1 : 0);
    },
    onSettled: () => void refresh(),
  });
  // The catalog for the allowed models' checkboxes: every model, whatever the key may call now.
  const models = useQuery({
    queryKey: ["models", false],
    queryFn: () => userApi.models(false),
    select: (list) => list.data.map((model) => ({ slug: model.id, family: model.owned_by })),
  });
  const limitsEditor = useKeyLimitsEditor<ApiKey>({
    set: userApi.setKeyLimits,
    clear: userApi.clearKeyLimits,
    onSaved: () => void refresh(),
    models: models.data,
    modelsError: models.error,
  });
  return { isOrganization, setIsOrganization, list, issue, issued, setIssued, change, models, limitsEditor };
}
