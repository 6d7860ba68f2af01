import { isCanonicalUtcInstant } from "./instant-range";
import { isStorableText } from "./storable-text";

/**
 * A page's cursor over rows ordered by (start instant, request id): the last row's position as base64url
 * JSON, opaque to clients, and the order it was read in where a reader has two. Decoding checks its shape
 * strictly (the instant as the reader writes it and a real one, the id as storable text of bounded length,
 * the order one of the reader's) and answers undefined for anything else, so a forged cursor is bad input.
 */
export interface StartPosition {
  startedAt: string;
  requestId: string;
}

export function encodePositionCursor(position: StartPosition, order?: string): string {
  const fields = [position.startedAt, position.requestId, ...(order === undefined ? [] : [order])];
  return Buffer.from(JSON.stringify(fields)).toString("base64url");
}

/**
 * The position, and the order when the cursor names one of `orders` (a cursor given before cursors named
 * their order has none).
 */
export function decodePositionCursor<Order extends string = never>(
  text: string,
  instantPattern: RegExp,
  orders: readonly Order[] = [],
): (StartPosition & { order: Order | undefined }) | undefined {
  try {
    const decoded = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(decoded) &&
      (decoded.length === 2 || (decoded.length === 3 && orders.includes(decoded[2]))) &&
      typeof decoded[0] === "string" &&
      instantPattern.test(decoded[0]) &&
      isCanonicalUtcInstant(decoded[0]) &&
      typeof decoded[1] === "string" &&
      decoded[1].length <= 200 &&
      isStorableText(decoded[1])
    )
      return { startedAt: decoded[0], requestId: decoded[1], order: decoded[2] as Order | undefined };
  } catch {
    // Not base64url JSON: undefined below.
  }
  return undefined;
}
