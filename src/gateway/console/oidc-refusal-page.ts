import { sessionLimits } from "../../kernel/limits";
import type { OidcRefusalReason, OidcSignInRefused } from "../../sessions/oidc-sign-in";
import { consoleServerPage, escapeHtml, type Language } from "./console-server-page";

/**
 * The page a refused OpenID Connect sign-in answers: why, in Korean or English (as the browser asks), in the
 * console's look, with a way back. Server-rendered so it says why without the app's JavaScript; it names an
 * OAuth error code or a claim's name at most, never a token, a secret or a stack.
 */

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
  "callback-invalid": {
    en: "The address that brought you back is not one the identity provider gives (a parameter missing, repeated, or naming another provider), so it was not trusted. Start again.",
    ko: "돌아온 주소가 ID 공급자가 보내는 형식이 아닙니다(매개변수가 없거나, 반복되거나, 다른 공급자를 가리킴). 신뢰하지 않았습니다. 다시 시작하세요.",
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
  "gateway-unavailable": {
    en: "The identity provider said who you are, but the gateway could not record the sign-in just now (its database is out of reach or behind). Try again in a moment.",
    ko: "ID 공급자는 사용자를 확인했지만, 게이트웨이가 지금 로그인을 기록하지 못했습니다(데이터베이스에 연결할 수 없거나 늦어짐). 잠시 후 다시 시도하세요.",
  },
};

const texts = {
  en: { title: "Sign-in refused", detail: "Detail", back: "Back to sign-in" },
  ko: { title: "로그인 거부됨", detail: "세부 정보", back: "로그인으로 돌아가기" },
} as const;

/**
 * The HTTP status of each refusal: the provider's failure is a bad gateway, the gateway's own an unavailable
 * service, the rest a bad request.
 */
export function refusalStatusOf(reason: OidcRefusalReason): number {
  if (reason === "not-configured") return 404;
  if (reason === "provider-failed") return 502;
  if (reason === "gateway-unavailable") return 503;
  return 400;
}

export function oidcRefusalPage(refusal: OidcSignInRefused, language: Language): string {
  const text = texts[language];
  const detail = refusal.detail
    ? `<p class="muted">${text.detail}: <code>${escapeHtml(refusal.detail)}</code></p>`
    : "";
  return consoleServerPage(
    language,
    text.title,
    `<p class="warning" data-reason="${refusal.reason}">${reasons[refusal.reason][language]}</p>
${detail}
<p><a href="/console/">${text.back}</a></p>`,
  );
}
