/**
 * Text a client wrote that the gateway repeats (an error's message, the access log's model and path, the
 * activity log's model) with every run shaped like a credential replaced: a key, a session token or the admin
 * token sent where none goes — as the model, in the path — is then repeated nowhere (C3). A model slug, a uuid,
 * a request id or a stream named by one has no such run, so what a client needs to see of its mistake stays.
 */

export const redactedText = "[redacted]";

const credentialShapes: readonly RegExp[] = [
  // An API key, whole or cut short; the hints' own `svc_…` has no word character after the prefix.
  /\bsvc_[\w-]{4,}/g,
  // A JWT: a session token, a console sign-in code, a platform's token.
  /\beyJ[\w-]*\.[\w-]*(?:\.[\w-]*)?/g,
  // A webhook's signing secret; the admin token a first start generates.
  /\bwhsec_[\w+/=-]{4,}/g,
  /\badmin_[\w-]{20,}/g,
];

/** A run as long as a random token, of letters and digits mixed: an admin token, an upstream key, a hash. */
const longRun = /[\w-]{40,}/g;
/** The gateway's own ids (uuids, request ids), which the streams named after them join into longer runs. */
const gatewayIds = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|req_[0-9a-f]{32}/gi;
const isOpaque = (run: string) => {
  const rest = run.replace(gatewayIds, "");
  return rest.length >= 40 && /\d/.test(rest) && /[a-z]/i.test(rest);
};

export function withoutCredentials(text: string): string {
  let redacted = text;
  for (const shape of credentialShapes) redacted = redacted.replace(shape, redactedText);
  return redacted.replace(longRun, (run) => (isOpaque(run) ? redactedText : run));
}
