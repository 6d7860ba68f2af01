import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Where a webhook may be sent (C14): not to a loopback, private, link-local, multicast, reserved or
 * unspecified address (nor any IPv6 form of one), unless the deployment allows private networks
 * (`WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`). Checked on the addresses the host resolves to, when an endpoint is
 * added and again at each delivery (a name may move).
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

/** Resolves the URL's host and refuses it when any address it names is not public (unless allowed). */
export async function assertDeliverableUrl(text: string, allowPrivateNetworks: boolean): Promise<URL> {
  const url = parseWebhookUrl(text);
  if (allowPrivateNetworks) return url;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
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
