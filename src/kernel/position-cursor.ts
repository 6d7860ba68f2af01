import { createHash } from "node:crypto";
import { isCanonicalUtcInstant } from "./instant-range";
import { isStorableText } from "./storable-text";

/**
 * A page's cursor over one account's rows ordered by (start instant, request id): the last row's position as
 * base64url JSON, opaque to clients, with what it was read for — the account (a digest of it) and, where a
 * reader has two orders, the order. A cursor is checked against the request it comes back with, so one of
 * another account, or read the other way, is refused rather than read as a position among other rows, where it
 * would silently skip or repeat them. Decoding checks the shape strictly (the instant as the reader writes it
 * and a real one, the id as storable text of bounded length, the order one of the reader's) and answers
 * undefined for anything else, so a forged cursor is bad input. A cursor given before cursors named what
 * they were read for (two fields) is still read, as a position alone; a list of the whole ledger gives such
 * cursors, of two fields, and refuses one with a scope.
 */
export interface StartPosition {
  startedAt: string;
  requestId: string;
}

export interface CursorScope<Order extends string = never> {
  /** `accountDigestOf` the account whose rows were read. */
  account: string;
  order?: Order | undefined;
}

/** An account as a cursor names it: a digest, so a cursor carries no id of unbounded length. */
export function accountDigestOf(account: { kind: string; id: string }): string {
  return createHash("sha256").update(`${account.kind}:${account.id}`).digest("base64url").slice(0, 16);
}

/**
 * `scope` left out: a position in an order over the whole ledger (the price, discount and FX histories),
 * which means the same in every list read in that order, so there is no account to name.
 */
export function encodePositionCursor<Order extends string = never>(
  position: StartPosition,
  scope?: CursorScope<Order>,
): string {
  const fields =
    scope === undefined
      ? [position.startedAt, position.requestId]
      : [position.startedAt, position.requestId, scope];
  return Buffer.from(JSON.stringify(fields)).toString("base64url");
}

const accountDigestPattern = /^[A-Za-z0-9_-]{16}$/;

export function decodePositionCursor<Order extends string = never>(
  text: string,
  instantPattern: RegExp,
  orders: readonly Order[] = [],
): (StartPosition & { scope: CursorScope<Order> | undefined }) | undefined {
  try {
    const decoded = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (
      Array.isArray(decoded) &&
      (decoded.length === 2 || (decoded.length === 3 && isScope(decoded[2], orders))) &&
      typeof decoded[0] === "string" &&
      instantPattern.test(decoded[0]) &&
      isCanonicalUtcInstant(decoded[0]) &&
      typeof decoded[1] === "string" &&
      decoded[1].length <= 200 &&
      isStorableText(decoded[1])
    )
      return {
        startedAt: decoded[0],
        requestId: decoded[1],
        scope: decoded[2] as CursorScope<Order> | undefined,
      };
  } catch {
    // Not base64url JSON: undefined below.
  }
  return undefined;
}

function isScope<Order extends string>(
  value: unknown,
  orders: readonly Order[],
): value is CursorScope<Order> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const { account, order, ...rest } = value as Record<string, unknown>;
  return (
    Object.keys(rest).length === 0 &&
    typeof account === "string" &&
    accountDigestPattern.test(account) &&
    (orders.length === 0 ? order === undefined : orders.includes(order as Order))
  );
}

/**
 * Whether a decoded cursor was read for `account` (and in `order`, where the reader has orders); a cursor
 * without a scope was read before cursors named one, and is taken as a position alone.
 */
export function cursorReadFor<Order extends string>(
  scope: CursorScope<Order> | undefined,
  account: { kind: string; id: string },
): boolean {
  return scope === undefined || scope.account === accountDigestOf(account);
}
