import { isCanonicalUtcInstant } from "./instant-range";
import { isStorableText } from "./storable-text";

/**
 * A page's cursor over rows ordered by (start instant, request id): the last row's position as base64url
 * JSON, opaque to clients. Decoding checks its shape strictly (the instant as the reader writes it and a real
 * one, the id as storable text of bounded length) and answers undefined for anything else, so a forged cursor is bad input.
 */
export interface StartPosition {
  startedAt: string;
  requestId: string;
}

export function encodePositionCursor(position: StartPosition): string {
  return Buffer.from(JSON.stringify([position.startedAt, position.requestId])).toString("base64url");
}

export function decodePositionCursor(text: string, instantPattern: RegExp): StartPosition | undefined {
  try {
    const decoded = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(decoded) &&
      decoded.length === 2 &&
      typeof decoded[0] === "string" &&
      instantPattern.test(decoded[0]) &&
      isCanonicalUtcInstant(decoded[0]) &&
      typeof decoded[1] === "string" &&
      decoded[1].length <= 200 &&
      isStorableText(decoded[1])
    )
      return { startedAt: decoded[0], requestId: decoded[1] };
  } catch {
    // Not base64url JSON: undefined below.
  }
  return undefined;
}
