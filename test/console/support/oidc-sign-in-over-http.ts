/**
 * A console sign-in by OpenID Connect driven over plain HTTP, as a browser follows it: the gateway's
 * `/console/sign-in/oidc`, the provider's development login and consent pages (oidc-provider's
 * devInteractions), and the callback back to the gateway. No browser, so a test can sign many users in.
 */

/** Cookies of one origin, as a browser keeps them (name → value), without paths or expiry beyond removal. */
class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const pair = header.split(";", 1)[0]!;
      const name = pair.slice(0, pair.indexOf("=")).trim();
      const value = pair.slice(pair.indexOf("=") + 1);
      if (value === "" || /max-age=0|expires=thu, 01 jan 1970/i.test(header)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

/** Where a sign-in ended: signed in (the session cookie's token), or the gateway's page refusing it. */
export type OidcSignInOutcome =
  | { signedIn: true; token: string }
  | { signedIn: false; status: number; html: string };

/** Signs `login` in at the provider and follows the redirects back to the gateway, until it answers. */
export async function signInOverHttp(gatewayUrl: string, login: string): Promise<OidcSignInOutcome> {
  const gatewayOrigin = new URL(gatewayUrl).origin;
  const jars = { gateway: new CookieJar(), provider: new CookieJar() };
  let url = new URL("/console/sign-in/oidc", gatewayUrl);
  let form: URLSearchParams | undefined;
  for (let step = 0; step < 20; step++) {
    const jar = url.origin === gatewayOrigin ? jars.gateway : jars.provider;
    const response = await fetch(url, {
      method: form ? "POST" : "GET",
      redirect: "manual",
      headers: {
        cookie: jar.header(),
        ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
      ...(form ? { body: form.toString() } : {}),
    });
    jar.take(response);
    form = undefined;
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url);
      if (url.origin === gatewayOrigin && url.pathname === "/console/") {
        const token = jars.gateway.get("session");
        if (!token) throw new Error("signed in without a session cookie");
        return { signedIn: true, token };
      }
      continue;
    }
    const page = await response.text();
    if (url.origin === gatewayOrigin) return { signedIn: false, status: response.status, html: page };
    if (response.status !== 200 || !url.pathname.startsWith("/interaction/"))
      throw new Error(`sign-in stopped at ${url.href} (${response.status}): ${page.slice(0, 300)}`);
    form = page.includes('name="login"')
      ? new URLSearchParams({ prompt: "login", login, password: "any" })
      : new URLSearchParams({ prompt: "consent" });
  }
  throw new Error("sign-in took more than 20 steps");
}
