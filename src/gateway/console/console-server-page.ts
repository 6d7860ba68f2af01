/**
 * The few pages the gateway renders itself, before the console app could (a refused sign-in, a sign-in link
 * to confirm): one look, Korean or English as the browser asks, no script. Their text is escaped here.
 */

export type Language = "en" | "ko";

export function languageOf(acceptLanguage: string | undefined): Language {
  const first = (acceptLanguage ?? "").split(",")[0]?.trim().toLowerCase() ?? "";
  return first.startsWith("ko") ? "ko" : "en";
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** A page: `title` (text) as its heading, `bodyHtml` (already escaped) under it. */
export function consoleServerPage(language: Language, title: string, bodyHtml: string): string {
  return `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
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
<main aria-labelledby="page-title">
<h1 id="page-title">${escapeHtml(title)}</h1>
${bodyHtml}
</main>
</body>
</html>
`;
}
