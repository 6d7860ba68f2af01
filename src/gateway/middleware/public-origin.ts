import type { Application, Request } from "express";

/**
 * The origin browsers reach this gateway at. Behind a TLS-terminating proxy the request itself says
 * `http` and whatever `Host` the proxy sent, so the console's OpenID Connect callback, the admin's
 * sign-in links and the cookies' `Secure` flag follow `PUBLIC_URL` when it is set. Without it they
 * follow the request (express trusts no proxy headers here).
 */

const publicUrlSetting = "won-gateway public url";

export function setPublicUrl(app: Application, publicUrl: URL | undefined): void {
  if (publicUrl) app.set(publicUrlSetting, publicUrl);
}

function configuredPublicUrl(request: Request): URL | undefined {
  const configured: unknown = request.app.get(publicUrlSetting);
  return configured instanceof URL ? configured : undefined;
}

/** `https://llm.example.com`: no path, no trailing slash. */
export function publicOriginOf(request: Request): string {
  return (
    configuredPublicUrl(request)?.origin ?? `${request.protocol}://${request.get("host") ?? "localhost"}`
  );
}

/** Whether browsers reach the gateway over https, so its cookies may say `Secure`. */
export function reachedOverHttps(request: Request): boolean {
  const configured = configuredPublicUrl(request);
  return configured ? configured.protocol === "https:" : request.secure;
}
