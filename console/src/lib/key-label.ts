import type { Language } from "./format";
import { systemText } from "./system-text";

/**
 * A key as usage and charges name it: its name beside the start of its id ("nightly batch · 3fe9cf43"). The
 * name comes with each row from the server, which keeps it after the key is deleted, so a replaced playground
 * key still reads as one; a key the ledger never issued shows its id alone.
 */
export function keyLabelOf(keyId: string, keyName: string | null, language: Language): string {
  const shortId = keyId.slice(0, 8);
  return keyName === null ? shortId : `${systemText(keyName, language)} · ${shortId}`;
}
