import type { UpstreamTimeouts } from "./http/upstream-timeouts";
import type { ProviderAdapter } from "./provider";

/** What every adapter needs to reach its upstream. */
export interface UpstreamAdapterOptions {
  /** `<FAMILY>_BASE_URL`, or the simulator's URL: the prefix the protocol's paths are appended to (C5). */
  baseUrl: string;
  apiKey: string;
  timeouts?: Partial<UpstreamTimeouts>;
  /** Keep-alive sockets to this upstream at most. */
  connectionsMax?: number;
}

/** A ProviderAdapter that owns a connection pool, closed once when the process shuts down. */
export interface UpstreamAdapter extends ProviderAdapter {
  close(): Promise<void>;
}
