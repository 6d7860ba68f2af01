import { useQuery } from "@tanstack/react-query";
import { ErrorMessage } from "../components/ui";
import { adminApi, type EndpointHealth } from "../lib/api";
import { formatCount, formatShare } from "../lib/format";
import { type MessageKey, useI18n } from "../lib/i18n";

/** Breakers change within seconds; the help text names this interval. */
const refreshIntervalMs = 5_000;

/**
 * Upstream endpoint health for operators: each endpoint and model, its breaker, requests in flight against
 * its capacity and its failures in the breaker's window, as the gateway process that answered sees them.
 * The route gives names and counts only, so no URL or key can reach this page.
 */
export function UpstreamsPage() {
  const { t } = useI18n();
  const upstreams = useQuery({
    queryKey: ["admin", "upstreams"],
    queryFn: adminApi.upstreams,
    refetchInterval: refreshIntervalMs,
  });
  return (
    <>
      <h1>{t("navUpstreams")}</h1>
      <p className="muted">{t("upstreamsHelp")}</p>
      <ErrorMessage error={upstreams.error} />
      {upstreams.data &&
        (upstreams.data.data.length === 0 ? (
          <p>{t("upstreamsEmpty")}</p>
        ) : (
          <div className="table-scroll">
            <table data-testid="upstreams-table">
              <thead>
                <tr>
                  <th scope="col">{t("upstreamEndpoint")}</th>
                  <th scope="col">{t("upstreamModels")}</th>
                  <th scope="col">{t("breakerState")}</th>
                  <th scope="col">{t("upstreamInFlight")}</th>
                  <th scope="col">{t("upstreamRecentRequests")}</th>
                  <th scope="col">{t("upstreamRecentFailedRequests")}</th>
                  <th scope="col">{t("upstreamFailureRate")}</th>
                </tr>
              </thead>
              <tbody>
                {upstreams.data.data.map((endpoint) => (
                  <EndpointRow key={`${endpoint.endpoint} ${endpoint.model}`} endpoint={endpoint} />
                ))}
              </tbody>
            </table>
          </div>
        ))}
    </>
  );
}

function EndpointRow({ endpoint }: { endpoint: EndpointHealth }) {
  const { t } = useI18n();
  const breaker = breakerBadgeOf(endpoint.breakerState);
  const capacity =
    endpoint.concurrentRequestsMax === null ? t("noLimit") : formatCount(endpoint.concurrentRequestsMax);
  return (
    <tr data-testid="upstream-row" data-endpoint={endpoint.endpoint} data-model={endpoint.model}>
      <th scope="row">
        <code>{endpoint.endpoint}</code>
      </th>
      <td>{endpoint.model}</td>
      <td>
        <span className={breaker.className} data-testid="breaker-state" data-state={endpoint.breakerState}>
          {t(breaker.label)}
        </span>
      </td>
      <td className="number">
        {formatCount(endpoint.outstanding)} / {capacity}
      </td>
      <td className="number">{formatCount(endpoint.recentRequests)}</td>
      <td className="number">{formatCount(endpoint.recentFailedRequests)}</td>
      <td className="number">{formatShare(endpoint.recentFailureRate)}</td>
    </tr>
  );
}

/** Green while it takes traffic, amber while it probes, red while it gets none. */
function breakerBadgeOf(state: EndpointHealth["breakerState"]): { className: string; label: MessageKey } {
  switch (state) {
    case "closed":
      return { className: "badge ok", label: "breakerClosed" };
    case "half-open":
      return { className: "badge warn", label: "breakerHalfOpen" };
    case "open":
      return { className: "badge bad", label: "breakerOpen" };
    default: {
      const unreachable: never = state;
      throw new Error(`unhandled breaker state ${String(unreachable)}`);
    }
  }
}
