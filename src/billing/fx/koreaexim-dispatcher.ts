import { constants } from "node:crypto";
import { rootCertificates } from "node:tls";
import { Agent } from "undici";

/**
 * The bank's server does not implement RFC 5746 secure renegotiation. OpenSSL 3 (Node 18+) refuses such
 * servers by default ("unsafe legacy renegotiation disabled", ERR_SSL_UNSAFE_LEGACY_RENEGOTIATION_DISABLED);
 * SSL_OP_LEGACY_SERVER_CONNECT allows the initial connection again. That is the only relaxation: the
 * certificate is still verified, and the cipher list stays Node's default (which still offers the
 * CBC suites older servers use). We never set `rejectUnauthorized: false`, as many public examples do.
 */
export const koreaeximTlsSecureOptions = constants.SSL_OP_LEGACY_SERVER_CONNECT;

export interface KoreaeximDispatcherOptions {
  connectTimeoutMs: number;
  /**
   * Extra PEM certificates to trust besides Node's roots: the remedy if the bank again serves an incomplete
   * chain (UNABLE_TO_VERIFY_LEAF_SIGNATURE) — add its intermediate here rather than turning verification off.
   */
  additionalCaCertificatesPem?: readonly string[];
}

/** The undici dispatcher for this one host only: the relaxation does not reach any other connection. */
export function createKoreaeximDispatcher(options: KoreaeximDispatcherOptions): Agent {
  const additional = options.additionalCaCertificatesPem ?? [];
  return new Agent({
    connect: {
      secureOptions: koreaeximTlsSecureOptions,
      timeout: options.connectTimeoutMs,
      ...(additional.length > 0 ? { ca: [...rootCertificates, ...additional] } : {}),
    },
    // One request a day: keeping sockets alive would only hold a legacy TLS session open.
    pipelining: 0,
  });
}
