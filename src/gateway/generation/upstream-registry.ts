import { resilienceLimitDefaults } from "../../kernel/limits";
import { type CatalogModel, findModel, listModels } from "../../providers/catalog";
import { createAdapter, type UpstreamAdapter, type UpstreamTimeouts } from "../../providers/create-adapter";
import type { GenerationRequest, ModelFamily, UpstreamProtocol } from "../../providers/provider";
import { type BreakerState, CircuitBreaker } from "../../providers/resilience/circuit-breaker";
import type { ResilienceLimits } from "../../providers/resilience/resilience-limits";
import {
  type ModelRoute,
  UpstreamCall,
  type UpstreamObserver,
} from "../../providers/resilience/upstream-call";
import { RouteEntry, UpstreamEndpoint } from "../../providers/resilience/upstream-endpoint";

export interface FamilyUpstream {
  baseUrl: string;
  apiKey: string;
}

/** One of a model's endpoints with its key resolved (models file `endpoints`). */
export interface EndpointUpstream extends FamilyUpstream {
  name: string;
  upstreamModelId?: string;
  weight: number;
  concurrentRequestsMax?: number;
}

export interface UpstreamResilienceOptions {
  /** A model's endpoints when the models file gives several, by slug. */
  modelEndpoints?: ReadonlyMap<string, readonly EndpointUpstream[]>;
  limits?: Partial<ResilienceLimits>;
  /** Metrics; nothing by default. */
  observer?: UpstreamObserver & {
    breakerChanged?(endpoint: string, model: string, state: BreakerState): void;
  };
}

/**
 * One endpoint as one model uses it, as the operators' view shows it (GET /admin/upstreams): names and
 * counts, never URL or key. The capacity is the endpoint's (shared by its models), the breaker the model's.
 */
export interface EndpointHealth {
  endpoint: string;
  model: string;
  breakerState: BreakerState;
  outstanding: number;
  concurrentRequestsMax: number | null;
  /** Requests and those that failed at this endpoint, in the breaker's current window (empty while open). */
  recentRequests: number;
  recentFailedRequests: number;
  recentFailureRate: number | null;
}

const silentObserver: UpstreamObserver = {
  attempted() {},
  outstandingChanged() {},
  answeredByFallback() {},
};

/**
 * The upstream endpoints of every model and one adapter (and keep-alive pool) per endpoint and protocol,
 * created on first use. A model's endpoints are those the models file gives it; else its own upstream;
 * else its family's. An endpoint is known by name (the family's by the family word, a model's own by its
 * slug), so models sharing it share its capacity; each model has its own breaker there. `call` hands out
 * the resilient call (C13).
 */
export class UpstreamRegistry {
  private readonly adapters = new Map<string, UpstreamAdapter>();
  private readonly endpoints = new Map<string, { endpoint: UpstreamEndpoint; upstream: FamilyUpstream }>();
  private readonly routes = new Map<string, ModelRoute>();
  private readonly limits: ResilienceLimits;
  private readonly observer: NonNullable<UpstreamResilienceOptions["observer"]>;

  constructor(
    private readonly upstreams: Record<ModelFamily, FamilyUpstream>,
    private readonly timeouts: Partial<UpstreamTimeouts>,
    private readonly modelUpstreams: ReadonlyMap<string, FamilyUpstream> = new Map(),
    private readonly resilience: UpstreamResilienceOptions = {},
  ) {
    this.limits = { ...resilienceLimitDefaults, ...resilience.limits };
    this.observer = resilience.observer ?? silentObserver;
    for (const model of listModels()) this.routeOf(model);
  }

  /**
   * The way to an answer for one request. `requestFor` builds the request for the requested model and
   * for each fallback (a fallback that cannot take it is skipped).
   */
  call(model: CatalogModel, requestFor: (model: CatalogModel) => GenerationRequest | null): UpstreamCall {
    const chain = [
      this.routeOf(model),
      ...(model.fallbacks ?? []).flatMap((slug) => {
        const fallback = findModel(slug);
        return fallback ? [this.routeOf(fallback)] : [];
      }),
    ];
    return new UpstreamCall({ chain, requestFor, limits: this.limits, observer: this.observer });
  }

  health(): EndpointHealth[] {
    const nowMs = Date.now();
    const entries = [...this.routes.values()].flatMap((route) =>
      route.entries.map((entry) => ({ model: route.model.slug, entry })),
    );
    entries.sort((one, other) =>
      one.entry.endpoint.name === other.entry.endpoint.name
        ? one.model.localeCompare(other.model)
        : one.entry.endpoint.name.localeCompare(other.entry.endpoint.name),
    );
    return entries.map(({ model, entry: { endpoint, breaker } }) => {
      const window = breaker.windowCounts(nowMs);
      return {
        endpoint: endpoint.name,
        model,
        breakerState: breaker.state(nowMs),
        outstanding: endpoint.outstanding,
        concurrentRequestsMax: endpoint.concurrentRequestsMax ?? null,
        recentRequests: window.requests,
        recentFailedRequests: window.failures,
        recentFailureRate: window.requests === 0 ? null : window.failures / window.requests,
      };
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.adapters.values()].map((adapter) => adapter.close()));
    this.adapters.clear();
  }

  private routeOf(model: CatalogModel): ModelRoute {
    const known = this.routes.get(model.slug);
    if (known && known.model === model) return known;
    const given = this.resilience.modelEndpoints?.get(model.slug);
    if (model.endpoints && !given)
      throw new Error(`model ${model.slug} has endpoints of its own but none were given`);
    const own = model.upstream ? this.modelUpstreams.get(model.slug) : undefined;
    if (model.upstream && !own)
      throw new Error(`model ${model.slug} has an upstream of its own but none was given`);
    const entries = given
      ? given.map(
          (upstream) =>
            new RouteEntry(
              this.endpointOf(upstream.name, upstream, upstream.concurrentRequestsMax),
              this.breakerOf(upstream.name, model.slug),
              upstream.weight,
              upstream.upstreamModelId,
            ),
        )
      : [
          new RouteEntry(
            own
              ? this.endpointOf(model.slug, own, undefined)
              : this.endpointOf(model.family, this.upstreams[model.family], undefined),
            this.breakerOf(own ? model.slug : model.family, model.slug),
            1,
            undefined,
          ),
        ];
    const route = { model, entries };
    this.routes.set(model.slug, route);
    return route;
  }

  private endpointOf(name: string, upstream: FamilyUpstream, concurrentRequestsMax: number | undefined) {
    const known = this.endpoints.get(name);
    if (known) {
      if (known.upstream.baseUrl !== upstream.baseUrl || known.upstream.apiKey !== upstream.apiKey)
        throw new Error(`upstream endpoint ${name} is given twice with different URLs or keys`);
      return known.endpoint;
    }
    const endpoint = new UpstreamEndpoint(name, concurrentRequestsMax, (protocol) =>
      this.adapterOf(name, upstream, protocol),
    );
    this.endpoints.set(name, { endpoint, upstream });
    return endpoint;
  }

  private breakerOf(endpointName: string, slug: string): CircuitBreaker {
    return new CircuitBreaker(this.limits, (state) =>
      this.observer.breakerChanged?.(endpointName, slug, state),
    );
  }

  private adapterOf(name: string, upstream: FamilyUpstream, protocol: UpstreamProtocol): UpstreamAdapter {
    const key = `${name}:${protocol}`;
    let adapter = this.adapters.get(key);
    if (!adapter) {
      adapter = createAdapter({ protocol, ...upstream, timeouts: this.timeouts });
      this.adapters.set(key, adapter);
    }
    return adapter;
  }
}
