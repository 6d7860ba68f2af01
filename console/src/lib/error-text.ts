import { ApiFailure } from "./api";
import type { MessageKey } from "./i18n";

/**
 * What an error shown on a page says: a sentence of the page's language, and the server's own words where
 * they help (a validation message names the field). The server's text is never translated by guess.
 */
export interface ErrorText {
  sentence: MessageKey;
  detail: string | null;
}

/** How browsers word a fetch that reached no server (Chromium, Firefox, Safari, React Native). */
const unreachableWording = /failed to fetch|networkerror|load failed|network request failed/i;

export function errorTextOf(error: unknown, options: { unauthenticated?: MessageKey } = {}): ErrorText {
  if (error instanceof ApiFailure) return apiFailureText(error, options.unauthenticated ?? "sessionEnded");
  if (error instanceof TypeError && unreachableWording.test(error.message)) {
    return { sentence: "errorUnreachable", detail: null };
  }
  return { sentence: "error", detail: error instanceof Error ? error.message : String(error) };
}

function apiFailureText(failure: ApiFailure, unauthenticated: MessageKey): ErrorText {
  const status = failure.httpStatus;
  if (status === 401) return { sentence: unauthenticated, detail: null };
  if (status === 400 || status === 422) return { sentence: "errorRefused", detail: failure.message };
  if (status === 403) return { sentence: "errorForbidden", detail: failure.message };
  if (status === 404) return { sentence: "errorNotFound", detail: failure.message };
  if (status === 429) return { sentence: "errorTooManyRequests", detail: failure.message };
  if (status >= 500) return { sentence: "errorGatewayFailed", detail: failure.message };
  return { sentence: "error", detail: failure.message };
}
