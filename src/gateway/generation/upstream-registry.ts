import type { CatalogModel } from "../../providers/catalog";
import { createAdapter, type UpstreamAdapter, type UpstreamTimeouts } from "../../providers/create-adapter";
import type { ModelFamily, UpstreamProtocol } from "../../providers/provider";

export interface FamilyUpstream {
  baseUrl: string;
  apiKey: string;
}

/**
 * One adapter (and keep-alive pool) per upstream and protocol, created on first use and kept. A model's
 * upstream is its family's, unless a models file gave it one of its own (`modelUpstreams`, by slug).
 */
export class UpstreamRegistry {
  private readonly adapters = new Map<string, UpstreamAdapter>();

  constructor(
    private readonly upstreams: Record<ModelFamily, FamilyUpstream>,
    private readonly timeouts: Partial<UpstreamTimeouts>,
    private readonly modelUpstreams: ReadonlyMap<string, FamilyUpstream> = new Map(),
  ) {}

  adapterFor(model: CatalogModel): UpstreamAdapter {
    const own = model.upstream ? this.modelUpstreams.get(model.slug) : undefined;
    if (model.upstream && !own)
      throw new Error(`model ${model.slug} has an upstream of its own but none was given`);
    const key = own
      ? `${model.upstream!.baseUrl}|${model.upstream!.apiKeyVariable}|${model.protocol}`
      : `${model.family}:${model.protocol}`;
    let adapter = this.adapters.get(key);
    if (!adapter) {
      adapter = own
        ? createAdapter({ protocol: model.protocol, ...own, timeouts: this.timeouts })
        : this.create(model.family, model.protocol);
      this.adapters.set(key, adapter);
    }
    return adapter;
  }

  async close(): Promise<void> {
    await Promise.all([...this.adapters.values()].map((adapter) => adapter.close()));
    this.adapters.clear();
  }

  private create(family: ModelFamily, protocol: UpstreamProtocol): UpstreamAdapter {
    const upstream = this.upstreams[family];
    return createAdapter({
      protocol,
      baseUrl: upstream.baseUrl,
      apiKey: upstream.apiKey,
      timeouts: this.timeouts,
    });
  }
}
