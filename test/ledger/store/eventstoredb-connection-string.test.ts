import { createRequire } from "node:module";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadLedgerCommandConfig } from "../../../src/config";

/**
 * EVENTSTORE_URL against `@eventstore/db-client`'s own parser (6.x, `parseConnectionString`): a key it does
 * not know, and `tlsVerifyCert=false`, it ignores, warning on stderr with the whole string, password and all.
 * Such a string is refused at start by name; every key the client reads is taken. No server.
 */

const { parseConnectionString } = createRequire(import.meta.url)(
  "@eventstore/db-client/dist/Client/parseConnectionString",
) as { parseConnectionString(connectionString: string): Record<string, unknown> };

/** What the client's parser says on stderr of a connection string (console.warn), and what it parsed. */
function parsedByTheClient(connectionString: string): {
  warnings: string[];
  options: Record<string, unknown>;
} {
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  try {
    const options = parseConnectionString(connectionString);
    return { warnings: warn.mock.calls.map((call) => String(call[0])), options };
  } finally {
    warn.mockRestore();
  }
}

const base = "esdb://admin:s3cret@db.example:2113";
const loaded = (url: string) => loadLedgerCommandConfig({ EVENTSTORE_URL: url });

afterEach(() => {
  vi.restoreAllMocks();
});

describe("EVENTSTORE_URL, as the EventStoreDB client parses it", () => {
  it("given tlsVerifyCert=false, which the client ignores quoting the password, then it is refused by name without it", () => {
    const url = `${base}?tlsVerifyCert=false`;
    expect(parsedByTheClient(url).warnings.join("\n")).toContain("s3cret");

    expect(() => loaded(url)).toThrow(
      /^invalid configuration: EVENTSTORE_URL sets tlsVerifyCert=false, which the EventStoreDB client ignores/,
    );
    expect(() => loaded(url)).not.toThrow(/s3cret/);
  });

  it.each(["tlsVerfyCert=false", "ssl=false", "tls=false&nodePrefrence=leader"])(
    "given a key the client does not know (%s), which it ignores, then it is refused naming the key",
    (query) => {
      const url = `${base}?${query}`;
      expect(parsedByTheClient(url).warnings).toHaveLength(1);

      const key = query.split("&").at(-1)!.split("=")[0]!;
      expect(() => loaded(url)).toThrow(
        new RegExp(
          `^invalid configuration: EVENTSTORE_URL sets ${key}, which the EventStoreDB client does not know`,
        ),
      );
      expect(() => loaded(url)).not.toThrow(/s3cret/);
    },
  );

  it.each([
    "tls=false",
    "tlsVerifyCert=true",
    "TLS=false&tls-ca-file=/etc/ca.pem",
    "tlsCAFile=/etc/ca.pem&userCertFile=/etc/user.crt&userKeyFile=/etc/user.key",
    "nodePreference=follower&maxDiscoverAttempts=3&discoveryInterval=100&gossipTimeout=5",
    "connectionName=ledger&defaultDeadline=10000&keepAliveInterval=10000&keepAliveTimeout=10000",
    "throwOnAppendFailure=false&dnsDiscover=false",
  ])("given only keys the client reads (%s), then it is taken as it is", (query) => {
    const url = `${base}?${query}`;
    expect(parsedByTheClient(url).warnings).toEqual([]);

    expect(loaded(url).eventStoreUrl).toBe(url);
  });

  it("reads a password holding ? or & as the client does: part of the credentials, not of the options", () => {
    const url = "esdb://admin:p%3Fa?b&c=d@db.example:2113?tls=false";
    expect(parsedByTheClient(url)).toMatchObject({ warnings: [], options: { tls: false } });

    expect(loaded(url).eventStoreUrl).toBe(url);
  });

  it("takes a string without options, and a cluster's hosts", () => {
    expect(loaded(base).eventStoreUrl).toBe(base);
    expect(loaded("esdb+discover://a.example:2113,b.example:2113").eventStoreUrl).toBe(
      "esdb+discover://a.example:2113,b.example:2113",
    );
  });
});
