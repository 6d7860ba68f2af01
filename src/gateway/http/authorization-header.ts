import type { IncomingMessage } from "node:http";

/**
 * Two `Authorization` headers are two credentials, and which one counts would be each reader's guess: node
 * keeps the first and drops the rest, while a proxy or firewall in front of the gateway may judge the last.
 * Such a request is refused whatever it asks, before any route reads a credential.
 */

export const authorizationGivenTwiceMessage =
  "The request has more than one Authorization header: send one Authorization header";

export function authorizationGivenTwice(request: IncomingMessage): boolean {
  let seen = 0;
  // rawHeaders: name, value, name, value… as received, duplicates kept.
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    if (request.rawHeaders[index]!.toLowerCase() === "authorization") seen += 1;
    if (seen > 1) return true;
  }
  return false;
}
