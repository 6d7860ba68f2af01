import type { RequestHandler } from "express";
import helmet from "helmet";
import { docsPageScriptHash } from "../openapi/docs-page";

/**
 * The headers a browser needs to keep the console, /docs and every express route safe (helmet's, as it
 * sets them): a Content-Security-Policy that runs only this origin's scripts (and /docs's one inline
 * script, by its hash), lets no page frame ours (a same-site page framing the console could have its
 * buttons clicked), `nosniff`, no referrer. No HSTS: TLS ends at the operator's proxy, which knows its
 * host names; a gateway served over plain HTTP (its default) must not tell a browser to upgrade its assets.
 */
export function securityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      directives: {
        "script-src": ["'self'", docsPageScriptHash],
        "frame-ancestors": ["'none'"],
        "upgrade-insecure-requests": null,
        // The console's sign-in form leads, by redirects, to the OpenID provider's page (C14): a form's
        // redirect is held to form-action too, and the provider is another origin.
        "form-action": null,
      },
    },
    strictTransportSecurity: false,
    xFrameOptions: { action: "deny" },
    referrerPolicy: { policy: "no-referrer" },
  });
}
