import { describe, expect, it } from "vitest";
import {
  assertDeliverableUrl,
  type HostLookup,
  isPrivateAddress,
  sharingLookupsInFlight,
  WebhookAddressRefusedError,
} from "../../../src/billing/alerts/webhook-address";

/**
 * Which addresses a webhook may reach (C14), in every form a URL or a resolver may give one, and how long the
 * check waits for a name's addresses.
 */

/** The host of a URL as the gateway reads it: WHATWG URLs rewrite IPv6 literals (`::127.0.0.1` → `::7f00:1`). */
const hostOf = (literal: string) => new URL(`http://${literal}/`).hostname.replace(/^\[(.*)\]$/, "$1");

describe("isPrivateAddress", () => {
  it.each([
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.0.1",
    "192.168.255.254",
    "169.254.169.254",
    "0.0.0.0",
    "100.64.0.1",
    "192.0.0.8",
    "198.18.0.1",
    "224.0.0.1",
    "239.255.255.250",
    "255.255.255.255",
    "::",
    "::1",
    "fd00::1",
    "fe80::1",
    "ff02::1",
  ])("refuses %s", (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    ["[::127.0.0.1]", "IPv4-compatible loopback"],
    ["[::ffff:127.0.0.1]", "IPv4-mapped loopback"],
    ["[::ffff:10.0.0.1]", "IPv4-mapped private"],
    ["[64:ff9b::127.0.0.1]", "NAT64 loopback"],
    ["[64:ff9b::169.254.169.254]", "NAT64 link-local"],
    ["[64:ff9b:1::a00:1]", "local-use NAT64"],
    ["[::ffff:0:127.0.0.1]", "IPv4-translated loopback"],
    ["[2002:7f00:1::]", "6to4 of loopback"],
    ["[2002:a9fe:a9fe::1]", "6to4 of link-local"],
    ["[fec0::1]", "site-local"],
  ])("refuses %s (%s) as a URL writes it", (literal) => {
    expect(isPrivateAddress(hostOf(literal))).toBe(true);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    // Just outside the private 172.16.0.0/12 and 192.168.0.0/16.
    "172.15.255.255",
    "172.32.0.1",
    "192.169.0.1",
    "2001:4860:4860::8888",
    hostOf("[::ffff:8.8.8.8]"),
    hostOf("[64:ff9b::8.8.8.8]"),
    hostOf("[2002:808:808::1]"),
  ])("lets %s through", (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });

  // IANA's special-purpose registries mark these not globally reachable: documentation and benchmarking
  // networks (the IPv4 benchmarking one is refused above), discard-only, IETF protocol assignments, SRv6.
  it.each([
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "100::1",
    "2001:2::1",
    "2001:db8::1",
    "2001::1",
    "3fff::1",
    "5f00::1",
  ])("refuses the reserved %s", (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it("refuses what is no address at all", () => {
    expect(isPrivateAddress("example.com")).toBe(true);
  });
});

describe("assertDeliverableUrl", () => {
  it("given a host whose name server never answers, then the URL is refused once the look-up took its bound, saying so", async () => {
    const startedAtMs = Date.now();
    const neverAnswers: HostLookup = () => new Promise(() => {});

    const checked = assertDeliverableUrl("https://silent-name-server.example/hook", false, {
      lookupHost: neverAnswers,
      timeoutMs: 200,
    });

    await expect(checked).rejects.toThrow(
      new WebhookAddressRefusedError("url's host silent-name-server.example did not resolve within 200 ms"),
    );
    expect(Date.now() - startedAtMs).toBeLessThan(1_000);
  });

  it("given a name with a public and a loopback or private address, then the URL is refused, whichever the resolver lists first", async () => {
    for (const addresses of [
      ["8.8.8.8", "127.0.0.1"],
      ["192.168.1.10", "8.8.8.8"],
      ["2001:4860:4860::8888", "::1"],
    ]) {
      const resolvesTo: HostLookup = async () =>
        addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

      const checked = assertDeliverableUrl("https://half-internal.example/hook", false, {
        lookupHost: resolvesTo,
        timeoutMs: 1_000,
      });

      await expect(checked, addresses.join(", ")).rejects.toThrow(WebhookAddressRefusedError);
    }
  });

  it("given a name with public addresses only, then the URL is kept", async () => {
    const resolvesTo: HostLookup = async () => [
      { address: "8.8.8.8", family: 4 },
      { address: "2001:4860:4860::8888", family: 6 },
    ];

    const checked = await assertDeliverableUrl("https://public.example/hook", false, {
      lookupHost: resolvesTo,
      timeoutMs: 1_000,
    });

    expect(checked.href).toBe("https://public.example/hook");
  });
});

describe("sharingLookupsInFlight", () => {
  it("given a name a look-up is still resolving, then another look-up of it waits for that one rather than asking again, and one after it asks afresh", async () => {
    // A resolver that answers each look-up only when told.
    const asked: { hostname: string; answer: () => void }[] = [];
    const lookUp = sharingLookupsInFlight(
      (hostname) =>
        new Promise((resolve) =>
          asked.push({ hostname, answer: () => resolve([{ address: "8.8.8.8", family: 4 }]) }),
        ),
    );

    const first = lookUp("silent-name-server.example");
    const second = lookUp("silent-name-server.example");
    const other = lookUp("other.example");
    expect(asked.map((question) => question.hostname)).toEqual([
      "silent-name-server.example",
      "other.example",
    ]);

    for (const { answer } of asked.splice(0)) answer();
    expect(await first).toEqual([{ address: "8.8.8.8", family: 4 }]);
    expect(await second).toEqual([{ address: "8.8.8.8", family: 4 }]);
    await other;

    const later = lookUp("silent-name-server.example");
    expect(asked.map((question) => question.hostname)).toEqual(["silent-name-server.example"]);
    asked[0]!.answer();
    await later;
  });
});
