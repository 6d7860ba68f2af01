import type { LookupAddress } from "node:dns";
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { webhookLimits } from "../../kernel/limits";

/**
 * Where a webhook may be sent (C14): not to a loopback, private, link-local, multicast, reserved or
 * unspecified address (nor any IPv6 form of one), unless the deployment allows private networks
 * (`WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`). Checked on the addresses the host resolves to, when an endpoint is
 * added and again at each delivery (a name may move); a look-up gives up after `hostResolutionTimeoutMs`.
 */

/**
 * IPv4 networks no webhook goes to: this host, private, shared, loopback, link-local, documentation,
 * benchmarking, multicast, reserved (IANA's special-purpose registry: not globally reachable).
 */
const refusedIpv4Networks = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  // Multicast, then reserved up to the broadcast address.
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const;

/** An IPv4 network's first address as the two 16-bit groups IPv6 writes it in ("127.0.0.0" → "7f00:0"). */
function hexGroupsOf(ipv4: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = ipv4.split(".").map(Number);
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

const refused = new BlockList();
for (const [network, prefix] of refusedIpv4Networks) {
  refused.addSubnet(network, prefix, "ipv4");
  // The same network reached through NAT64's well-known prefix (64:ff9b::10.0.0.1), as an IPv4-translated
  // address (::ffff:0:10.0.0.1), or through a 6to4 prefix (2002:a00:1::, the IPv4 address in bits 16–47).
  refused.addSubnet(`64:ff9b::${network}`, 96 + prefix, "ipv6");
  refused.addSubnet(`::ffff:0:${network}`, 96 + prefix, "ipv6");
  refused.addSubnet(`2002:${hexGroupsOf(network)}::`, 16 + prefix, "ipv6");
}
for (const [network, prefix] of [
  // Unspecified, loopback and the deprecated IPv4-compatible form (::127.0.0.1): none is a public host.
  ["::", 96],
  // NAT64 for local use (RFC 8215): it translates to whatever IPv4 network the site chose.
  ["64:ff9b:1::", 48],
  // Discard-only; IETF protocol assignments (Teredo, benchmarking and the like); documentation (both); SRv6.
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["3fff::", 20],
  ["5f00::", 16],
  ["fc00::", 7],
  // Site-local (deprecated, still routed where configured) and link-local.
  ["fec0::", 10],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  refused.addSubnet(network, prefix, "ipv6");

/** The refusal of a webhook URL, said to the client (400/100 at the edge). */
export class WebhookAddressRefusedError extends Error {
  override readonly name = "WebhookAddressRefusedError";
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return refused.check(address, "ipv4");
  if (family !== 6) return true;
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is judged as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return refused.check(mapped[1]!, "ipv4");
  return refused.check(address, "ipv6");
}

/** The URL, when it is http(s) with a host; else WebhookAddressRefusedError. */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebhookAddressRefusedError("url must be an absolute http:// or https:// URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new WebhookAddressRefusedError("url must be an absolute http:// or https:// URL");
  if (url.username || url.password) throw new WebhookAddressRefusedError("url must not carry credentials");
  return url;
}

/** Every address a host name has; tests give a name server of their own. */
export type HostLookup = (hostname: string) => Promise<readonly LookupAddress[]>;

/** Where a host's addresses come from, and how long the check and the connection each wait for them. */
export interface HostResolution {
  lookupHost: HostLookup;
  timeoutMs: number;
}

/**
 * `lookUp` with a name still being looked up never asked again: every caller of that name waits for the
 * look-up under way, and the next one after it ends asks afresh.
 */
export function sharingLookupsInFlight(lookUp: HostLookup): HostLookup {
  const inFlight = new Map<string, Promise<readonly LookupAddress[]>>();
  return (hostname) => {
    const underWay = inFlight.get(hostname);
    if (underWay) return underWay;
    const started = lookUp(hostname).finally(() => inFlight.delete(hostname));
    inFlight.set(hostname, started);
    return started;
  };
}

/**
 * The system's resolver (getaddrinfo: the hosts file, then DNS), as every other connection of the process
 * uses. Its look-ups run on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise) and cannot
 * be cancelled: one a name server never answers holds its thread for the resolver's own timeouts, long after
 * the attempt that asked gave up. So a name still being looked up is not asked again: every attempt at it
 * (a receiver's backlog, its retries) waits for that one, and one silent name holds one thread, not them all.
 */
export const systemHostLookup: HostLookup = sharingLookupsInFlight((hostname) =>
  lookup(hostname, { all: true }),
);

export const defaultHostResolution: HostResolution = {
  lookupHost: systemHostLookup,
  timeoutMs: webhookLimits.hostResolutionTimeoutMs,
};

/** A look-up that took its whole bound: what a delivery attempt records, and an add is refused with. */
export class HostNotResolvedInTimeError extends Error {
  override readonly name = "HostNotResolvedInTimeError";
  constructor(host: string, timeoutMs: number) {
    super(`url's host ${host} did not resolve within ${timeoutMs} ms`);
  }
}

/** The host's addresses, or HostNotResolvedInTimeError once the bound passed (the look-up left to run). */
export async function resolveHost(
  host: string,
  resolution: HostResolution,
): Promise<readonly LookupAddress[]> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new HostNotResolvedInTimeError(host, resolution.timeoutMs)),
      resolution.timeoutMs,
    );
  });
  try {
    return await Promise.race([resolution.lookupHost(host), bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves the URL's host and refuses it when any address it names is not public (unless allowed). */
export async function assertDeliverableUrl(
  text: string,
  allowPrivateNetworks: boolean,
  resolution: HostResolution = defaultHostResolution,
): Promise<URL> {
  const url = parseWebhookUrl(text);
  if (allowPrivateNetworks) return url;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await resolveHost(host, resolution)).map((entry) => entry.address);
  } catch (error) {
    if (error instanceof HostNotResolvedInTimeError) throw new WebhookAddressRefusedError(error.message);
    throw new WebhookAddressRefusedError(`url's host ${host} does not resolve`);
  }
  // The refusal names the host the client wrote, never the address it resolved to: what the deployment's
  // own names resolve to is no client's to learn.
  if (addresses.length === 0 || addresses.some(isPrivateAddress))
    throw new WebhookAddressRefusedError(
      `url's host ${host} is a loopback, private or link-local address; webhooks go only to public addresses`,
    );
  return url;
}
