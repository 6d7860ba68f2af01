import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import Provider from "oidc-provider";

/**
 * A real OpenID provider in-process (oidc-provider, the certified Node implementation), on 127.0.0.1 over
 * http: its development login and consent pages, its JWKS, its token and userinfo endpoints. A test may have
 * the token endpoint hand out a forged ID token instead of the one it minted (expired, or signed by a key
 * that is not the provider's), or the redirect back carry another `state`, so the gateway's checks are tried
 * on the real callback path.
 */

export interface TestAccount {
  /** What the provider knows of the person; `sub` is the login typed on its page. */
  claims: Record<string, string>;
}

export type IdTokenForgery = "expired" | "foreign-key";

export interface OpenIdProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Registers the gateway's callback (known only once the gateway listens) and starts answering. */
  register(redirectUri: string): void;
  /** From now on, the token endpoint's ID tokens are forged this way; undefined: the real ones. */
  forgeIdTokens(forgery: IdTokenForgery | undefined): void;
  /** From now on, the redirect back to the client carries this `state`; undefined: the client's own. */
  answerWithState(state: string | undefined): void;
  close(): Promise<void>;
}

export async function startOpenIdProvider(accounts: Record<string, TestAccount>): Promise<OpenIdProvider> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(503).end("not registered yet");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signing = await signingKey("provider-key-1");
  const foreign = await signingKey("provider-key-1");
  const clientId = "won-gateway-console";
  const clientSecret = "console-client-secret-0123456789abcdef";
  let forgery: IdTokenForgery | undefined;
  let answeredState: string | undefined;

  const forged = async (idToken: string, kind: IdTokenForgery): Promise<string> => {
    const { iat: _iat, exp: _exp, ...claims } = decodeJwt(idToken);
    const now = Math.floor(Date.now() / 1_000);
    // Expired well beyond any clock tolerance, yet signed by the provider's own key: only `exp` is wrong.
    const [issuedAt, expiresAt] = kind === "expired" ? [now - 7_200, now - 3_600] : [now, now + 600];
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: signing.jwk.kid!, typ: "JWT" })
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(kind === "expired" ? signing.privateKey : foreign.privateKey);
  };

  return {
    issuer,
    clientId,
    clientSecret,
    register(redirectUri) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            grant_types: ["authorization_code"],
            response_types: ["code"],
            token_endpoint_auth_method: "client_secret_post",
          },
        ],
        // Scope claims go to userinfo only (the provider's default), as with many real providers.
        claims: { openid: ["sub"], profile: ["name", "employee_id", "org_id", "org_role"], email: ["email"] },
        findAccount: (_context, id) => ({
          accountId: id,
          claims: () => ({ ...(accounts[id]?.claims ?? {}), sub: id }),
        }),
        pkce: { required: () => true },
        jwks: { keys: [signing.privateJwk] },
        cookies: { keys: ["test-provider-cookie-key-0123456789"] },
        features: { devInteractions: { enabled: true } },
      });
      provider.use(async (context, next) => {
        await next();
        const body = context.body as { id_token?: string } | undefined;
        if (context.path === "/token" && forgery && typeof body?.id_token === "string")
          context.body = { ...body, id_token: await forged(body.id_token, forgery) };
        const location: string = context.response.get("location") ?? "";
        if (answeredState !== undefined && location.startsWith(redirectUri)) {
          const tampered = new URL(location);
          tampered.searchParams.set("state", answeredState);
          context.set("location", tampered.href);
        }
      });
      server.removeAllListeners("request");
      server.on("request", provider.callback());
    },
    forgeIdTokens(next) {
      forgery = next;
    },
    answerWithState(state) {
      answeredState = state;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function signingKey(kid: string) {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" };
  return { privateKey, privateJwk, jwk: privateJwk };
}
