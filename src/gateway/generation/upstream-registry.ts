import type { CatalogModel } from "../../providers/catalog";
import { createAdapter, type UpstreamAdapter, type UpstreamTimeouts } from "../../providers/create-adapter";
import type { ModelFamily, UpstreamProtocol } from "../../providers/provider";

export interface FamilyUpstream {
  baseUrl: string;
  apiKey: string;
}

/** One adapter (and keep-alive pool) per family and protocol, created on first use and kept. */
export class UpstreamRegistry {
  private readonly adapters = new Map<string, UpstreamAdapter>();

  constructor(
    private readonly upstreams: Record<ModelFamily, FamilyUpstream>,
    private readonly timeouts: Partial<UpstreamTimeouts>,
  ) {}

  adapterFor(model: CatalogModel): UpstreamAdapter {
    const key = `${model.family}:${model.protocol}`;
    let adapter = this.adapters.get(key);
    if (!adapter) {
      adapter = this.create(model.family, model.protocol);
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
