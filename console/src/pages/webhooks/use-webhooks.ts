import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { userApi, type WebhookEndpoint } from "../../lib/api";

/** A signing secret the page shows once: a new endpoint's, or the one a rotation gave it. */
export interface ShownSecret {
  webhookId: string;
  url: string;
  secret: string;
  rotated: boolean;
}

/**
 * The chosen account's low-funds threshold and webhook endpoints, and what the page does to them. Used only
 * where the session may manage them: an organization member would only be refused (403/160).
 */
export function useWebhooks(isOrganization: boolean) {
  const client = useQueryClient();
  const [shownSecret, setShownSecret] = useState<ShownSecret | null>(null);
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
      setShownSecret({ webhookId: endpoint.id, url: endpoint.url, secret: endpoint.secret, rotated: false });
      void client.invalidateQueries({ queryKey: ["webhooks"] });
    },
  });
  const rotate = useMutation({
    mutationFn: (endpoint: WebhookEndpoint) => userApi.rotateWebhookSecret(endpoint.id),
    onSuccess: (rotated, endpoint) =>
      setShownSecret({ webhookId: rotated.id, url: endpoint.url, secret: rotated.secret, rotated: true }),
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
  return { threshold, list, setThreshold, add, shownSecret, setShownSecret, remove, rotate, sendTest };
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
