import { consoleServerPage, escapeHtml, type Language } from "./console-server-page";

/**
 * What a one-time sign-in link shows when another site led the browser to it, or a program fetched it,
 * instead of signing in at once: a page of another site could otherwise sign a visitor into its own account
 * (login CSRF), and the visitor would then work — issue keys, set webhooks — in it; a link preview would
 * spend the sign-in the person it was sent to then finds expired. The link on this page is of this site, so
 * following it signs in. The code is not redeemed until then.
 */

const texts = {
  en: {
    title: "Sign in to the console?",
    lead: "This one-time sign-in link was opened from another site or by a program. Continue only if you asked for it: you will be signed in to the account it was made for, in place of any session you have here.",
    go: "Sign in",
    back: "Do not sign in",
  },
  ko: {
    title: "콘솔에 로그인할까요?",
    lead: "이 일회용 로그인 링크가 다른 사이트나 프로그램에서 열렸습니다. 직접 요청한 링크일 때만 계속하세요. 이 링크가 만들어진 계정으로 로그인되며, 지금의 세션은 바뀝니다.",
    go: "로그인",
    back: "로그인하지 않기",
  },
} as const;

export function signInConfirmationPage(code: string, language: Language): string {
  const text = texts[language];
  const href = `/console/sign-in?code=${encodeURIComponent(code)}`;
  return consoleServerPage(
    language,
    text.title,
    `<p class="warning">${text.lead}</p>
<p><a href="${escapeHtml(href)}">${text.go}</a> · <a href="/console/">${text.back}</a></p>`,
  );
}
