import {
  demoCreditReference,
  demoKeyDescription,
  playgroundKeyName,
  playgroundKeyUserOf,
} from "../../../src/kernel/system-texts";
import type { Language } from "./format";

/**
 * What the service wrote itself (src/kernel/system-texts.ts) in the page's language; anything a person typed
 * is shown as typed. The ledger keeps the English for good, so the translation happens here, on the exact
 * strings.
 */

const korean: Record<string, string> = {
  [demoCreditReference]: "첫 시작 때 받은 데모 크레딧",
  [demoKeyDescription]: "첫 시작 때 만든 키",
  [playgroundKeyName]: "콘솔 플레이그라운드",
};

export function systemText(text: string, language: Language): string {
  if (language === "en") return text;
  const playgroundUser = playgroundKeyUserOf(text);
  if (playgroundUser !== undefined)
    return `${playgroundUser}의 플레이그라운드용으로 웹 콘솔이 발급한 키 (열 때마다 새로 발급)`;
  return korean[text] ?? text;
}
