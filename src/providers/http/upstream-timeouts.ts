/** How long the gateway waits on one upstream, and how many sockets it keeps open to it. */
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

export const upstreamTimeoutDefaults: Readonly<UpstreamTimeouts> = Object.freeze({
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 600_000,
  bodyTimeoutMs: 600_000,
  keepAliveTimeoutMs: 30_000,
});

/** Sockets per upstream: enough for a busy gateway, bounded so one upstream cannot exhaust descriptors. */
export const upstreamConnectionsMaxDefault = 256;

/** A JSON reply larger than this is treated as malformed rather than buffered. */
export const upstreamReplyBytesMax = 32 * 1024 * 1024;
/** Only the message of an error body is used, so a little is enough. */
export const upstreamErrorBodyBytesMax = 64 * 1024;
/** One server-sent event (or one unterminated line) larger than this is treated as malformed. */
export const upstreamEventCharactersMax = 8 * 1024 * 1024;
