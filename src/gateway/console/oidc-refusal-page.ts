import { sessionLimits } from "../../kernel/limits";
import type { OidcRefusalReason, OidcSignInRefused } from "../../sessions/oidc-sign-in";

/**
 * The page a refused OpenID Connect sign-in answers: why, in Korean or English (as the browser asks), in the
 * console's look, with a way back. Server-rendered so it says why without the app's JavaScript; it names an
 * OAuth error code or a claim's name at most, never a token, a secret or a stack.
 */

type Language = "en" | "ko";

const transactionMinutes = sessionLimits.oidcTransactionTtlSeconds / 60;

const reasons: Record<OidcRefusalReason, Record<Language, string>> = {
  "not-configured": {
    en: "Sign-in with an identity provider is not set up on this gateway (OIDC_ISSUER is unset).",
    ko: "이 게이트웨이에는 ID 공급자 로그인이 설정되어 있지 않습니다(OIDC_ISSUER 미설정).",
  },
  "transaction-missing": {
    en: `This sign-in was not started here, or took longer than ${transactionMinutes} minutes. Start again.`,
    ko: `이 로그인은 여기서 시작되지 않았거나 ${transactionMinutes}분을 넘겼습니다. 다시 시작하세요.`,
  },
  "state-mismatch": {
    en: "The identity provider answered with a state that does not match this sign-in, so the answer was not trusted.",
    ko: "ID 공급자의 응답에 담긴 state가 이 로그인과 일치하지 않아 응답을 신뢰하지 않았습니다.",
  },
  "provider-error": {
    en: "The identity provider refused the sign-in.",
    ko: "ID 공급자가 로그인을 거부했습니다.",
  },
  "provider-failed": {
    en: "The identity provider could not be reached, or answered something the gateway cannot accept.",
    ko: "ID 공급자에 연결할 수 없거나, 게이트웨이가 받아들일 수 없는 응답을 보냈습니다.",
  },
  "id-token-expired": {
    en: "The identity provider's ID token has expired (or is not valid yet).",
    ko: "ID 공급자의 ID 토큰이 만료되었거나 아직 유효하지 않습니다.",
  },
  "id-token-signature": {
    en: "The ID token is not signed by the identity provider's keys.",
    ko: "ID 토큰이 ID 공급자의 키로 서명되지 않았습니다.",
  },
  "id-token-claims": {
    en: "The ID token was issued by another provider, for another client, or for another sign-in (issuer, audience or nonce).",
    ko: "ID 토큰의 발급자, 대상 또는 nonce가 이 로그인과 맞지 않습니다.",
  },
  "user-claim-missing": {
    en: "The identity provider did not say who you are: the user claim is missing.",
    ko: "ID 공급자가 사용자를 알려주지 않았습니다. 사용자 클레임이 없습니다.",
  },
  "claim-invalid": {
    en: "A claim the gateway reads is not an id it can use (text of at most 256 characters).",
    ko: "게이트웨이가 읽는 클레임 값이 사용할 수 없는 형식입니다(최대 256자의 텍스트).",
  },
};

const texts = {
  en: { title: "Sign-in refused", detail: "Detail", back: "Back to sign-in" },
  ko: { title: "로그인 거부됨", detail: "세부 정보", back: "로그인으로 돌아가기" },
} as const;

/** The HTTP status of each refusal: the provider's failure is a bad gateway, the rest a bad request. */
export function refusalStatusOf(reason: OidcRefusalReason): number {
  if (reason === "not-configured") return 404;
  if (reason === "provider-failed") return 502;
  return 400;
}

export function languageOf(acceptLanguage: string | undefined): Language {
  const first = (acceptLanguage ?? "").split(",")[0]?.trim().toLowerCase() ?? "";
  return first.startsWith("ko") ? "ko" : "en";
}

export function oidcRefusalPage(refusal: OidcSignInRefused, language: Language): string {
  const text = texts[language];
  const detail = refusal.detail
    ? `<p class="muted">${text.detail}: <code>${escapeHtml(refusal.detail)}</code></p>`
    : "";
  return `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${text.title}</title>
<style>
:root { font-family: system-ui, "Apple SD Gothic Neo", "Noto Sans KR", "Malgun Gothic", sans-serif;
  color: #1f2937; background: #f5f6f8; line-height: 1.5; }
:root:lang(ko) { word-break: keep-all; }
body { margin: 0; padding: 2rem 1rem; }
main { max-width: 32rem; margin: 0 auto; background: #fff; border: 1px solid #e5e7eb; border-radius: 8px;
  padding: 1rem 1.25rem; }
h1 { font-size: 1.1rem; margin: 0 0 0.75rem; }
.warning { background: #fef3c7; border: 1px solid #b45309; color: #78350f; padding: 0.5rem 0.75rem;
  border-radius: 4px; }
.muted { color: #4b5563; }
code { overflow-wrap: break-word; }
a { color: #1d4ed8; }
</style>
</head>
<body>
<main aria-labelledby="refusal-title">
<h1 id="refusal-title">${text.title}</h1>
<p class="warning" data-reason="${refusal.reason}">${reasons[refusal.reason][language]}</p>
${detail}
<p><a href="/console/">${text.back}</a></p>
</main>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
