import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type AddedWebhookEndpoint, userApi, type WebhookEndpoint } from "../../lib/api";

/**
 * The chosen account's low-funds threshold and webhook endpoints, and what the page does to them. Used only
 * where the session may manage them: an organization member would only be refused (403/160).
 */
export function useWebhooks(isOrganization: boolean) {
  const client = useQueryClient();
  const [added, setAdded] = useState<AddedWebhookEndpoint | null>(null);
  const threshold = useQuery({
    queryKey: ["alert-threshold", isOrganization],
    queryFn: () => userApi.alertThreshold(isOrganization),
  });
  const list = useQuery({
    queryKey: ["webhooks", isOrganization],
    queryFn: () => userApi.webhooks(isOrganization),
  });
  const setThreshold = useMutation({
    mutationFn: (balanceBelowWon: string | null) =>
      userApi.setAlertThreshold({ isOrganization, balanceBelowWon }),
    onSuccess: () => client.invalidateQueries({ queryKey: ["alert-threshold"] }),
  });
  const add = useMutation({
    mutationFn: userApi.addWebhook,
    onSuccess: (endpoint) => {
      setAdded(endpoint);
      void client.invalidateQueries({ queryKey: ["webhooks"] });
    },
  });
  const remove = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => userApi.deleteWebhook(endpoint.id),
    onSettled: () => client.invalidateQueries({ queryKey: ["webhooks"] }),
  });
  const sendTest = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => userApi.testWebhook(endpoint.id),
    onSuccess: (_message, endpoint) =>
      client.invalidateQueries({ queryKey: ["webhook-deliveries", endpoint.id] }),
  });
  return { threshold, list, setThreshold, add, added, setAdded, remove, sendTest };
}

/** Pending deliveries change within seconds (the worker polls): read again until there is one and none is pending. */
const pendingRefreshMs = 1_000;

export function useWebhookDeliveries(webhookId: string | null) {
  return useQuery({
    queryKey: ["webhook-deliveries", webhookId],
    queryFn: () => userApi.webhookDeliveries(webhookId ?? ""),
    enabled: webhookId !== null,
    // Also while empty: a log opened with its first (test) message still being queued shows it once it lands.
    refetchInterval: (query) => {
      const rows = query.state.data?.data;
      return rows === undefined || rows.length === 0 || rows.some((delivery) => delivery.status === "pending")
        ? pendingRefreshMs
        : false;
    },
  });
}
