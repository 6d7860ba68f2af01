/**
 * What an EventStoreDB connection string may set, checked before `@eventstore/db-client` (6.x) parses it.
 * Its parser ignores `tlsVerifyCert=false` and every key it does not know, and says so on stderr by quoting
 * the whole string, password included; such a string is refused by name instead. The rest (hosts, ports,
 * values) is the client's to parse.
 */

/** The keys the client reads (`Client/parseConnectionString.js`), compared as it does: case, `-` and `_` aside. */
const clientOptionKeys = [
  "userCertFile",
  "userKeyFile",
  "maxDiscoverAttempts",
  "connectionName",
  "defaultDeadline",
  "discoveryInterval",
  "gossipTimeout",
  "nodePreference",
  "tls",
  "tlsVerifyCert",
  "tlsCAFile",
  "throwOnAppendFailure",
  "keepAliveInterval",
  "keepAliveTimeout",
];
const flatKeys = new Set(clientOptionKeys.map(flatCaseOf));
/** Read by the client only when spelt exactly so, outside its table of keys. */
const exactKeys = new Set(["dnsDiscover"]);

function flatCaseOf(key: string): string {
  return key.trim().toLowerCase().replace(/[_-]/g, "");
}

/** Why the client would not do what the string says, in words that never quote it; undefined if it would. */
export function eventStoreConnectionStringProblem(connectionString: string): string | undefined {
  for (const { key, value } of optionsOf(connectionString)) {
    if (flatCaseOf(key) === "tlsverifycert" && value.trim() === "false")
      return "sets tlsVerifyCert=false, which the EventStoreDB client ignores (it verifies the server's certificate all the same): name a CA the certificate chains to with tlsCAFile=, or connect to an insecure server with tls=false";
    if (!flatKeys.has(flatCaseOf(key)) && !exactKeys.has(key))
      return `sets ${key}, which the EventStoreDB client does not know and would ignore (it reads ${clientOptionKeys.join(", ")})`;
  }
  return undefined;
}

/** The `?key=value&…` pairs after the hosts, found as the client finds them: past the credentials. */
function optionsOf(connectionString: string): { key: string; value: string }[] {
  const afterCredentials = connectionString
    .trim()
    .replace(/^[^:]+:\/\//, "")
    .replace(/^[^:]+:[^@]+@/, "");
  const queryStart = afterCredentials.indexOf("?");
  if (queryStart === -1) return [];
  return afterCredentials
    .slice(queryStart + 1)
    .split("&")
    .filter((pair) => pair !== "")
    .map((pair) => {
      const separator = pair.indexOf("=");
      return separator === -1
        ? { key: pair, value: "" }
        : { key: pair.slice(0, separator), value: pair.slice(separator + 1) };
    });
}
