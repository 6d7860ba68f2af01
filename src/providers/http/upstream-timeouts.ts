/**
 * How long the gateway waits on one upstream. The defaults (`upstreamTimeoutDefaults`) and the bounds on what
 * an upstream may send (`upstreamLimits`) are in src/kernel/limits.ts.
 */
export interface UpstreamTimeouts {
  /** TCP and TLS handshake. */
  connectTimeoutMs: number;
  /**
   * Until the response headers arrive. A JSON reply's headers come only after the whole generation, so this
   * matches the official clients' 10-minute request timeout.
   */
  headersTimeoutMs: number;
  /** Longest silence between two body chunks; reasoning models may think for minutes before a delta. */
  bodyTimeoutMs: number;
  /** How long an idle keep-alive socket is kept (undici lowers it to the server's own hint). */
  keepAliveTimeoutMs: number;
}
