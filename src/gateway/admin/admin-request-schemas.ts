import { z } from "zod";
import { isAcceptableCreditAmount } from "../../billing/commands/top-up-credit";
import {
  isAcceptableDiscountRate,
  isAcceptableFxRate,
  isAcceptableUnitPrice,
} from "../../kernel/charge-limits";
import { billingLimits } from "../../kernel/limits";
import { isDecimalString, type Money, parseMoney } from "../../kernel/money";
import { isIsoDate } from "../../kernel/seoul-calendar";
import { accountKinds, ledgerEventTypes } from "../../ledger/events";
import { accountIdentifier } from "../http/account-identifier";
import { displayLineString } from "../http/display-name-string";
import { storableString } from "../http/storable-string";
import { closedBodySchema } from "../wire/closed-object-schema";

/**
 * Request shapes of the admin API (C6). Money is a decimal string, never a JSON number: a number has
 * already lost digits by the time it is parsed, so it is refused (400/100) rather than converted. Bodies are
 * closed: a misspelt field (`referense`, `cachedInputUsdPer1m`) is refused naming it, never read as left out.
 */

const moneyText = (example: string) =>
  z
    .string({ error: `must be a decimal string such as "${example}" (JSON numbers are not accepted)` })
    .refine(isDecimalString, `must be a decimal string such as "${example}"`);

/** A decimal string that also satisfies `isAcceptable`, as Money. Checks the form first: parseMoney throws. */
const acceptableMoney = (example: string, isAcceptable: (amount: Money) => boolean, message: string) =>
  moneyText(example)
    .refine((text) => isDecimalString(text) && isAcceptable(parseMoney(text)), message)
    .transform(parseMoney);

const unitPriceText = acceptableMoney(
  "1.25",
  isAcceptableUnitPrice,
  "must be ≥ 0, below 1000000, at most 10 decimals",
);

const isoDateText = z.string().refine(isIsoDate, 'must be a date "YYYY-MM-DD"');

const accountTextMessage = "must be user:ID or organization:ID";

/** An account as one text, "user:ID" or "organization:ID" (a query, a body), read as its reference. */
export const accountReferenceText = z
  .string({ error: accountTextMessage })
  .regex(/^(user|organization):/, accountTextMessage)
  .transform((text) => {
    const separator = text.indexOf(":");
    return { kind: text.slice(0, separator), id: text.slice(separator + 1) };
  })
  .pipe(z.object({ kind: z.enum(accountKinds), id: accountIdentifier }));

export const accountPathSchema = z.object({
  kind: z.enum(accountKinds, { error: "must be user or organization" }),
  id: accountIdentifier,
});

/** `PUT /models/:slug/price`: the slug is looked up in the catalog (unknown: 404/120). */
export const modelPathSchema = z.object({ slug: storableString });

export const creditBodySchema = closedBodySchema({
  amountWon: acceptableMoney(
    "10000",
    isAcceptableCreditAmount,
    "must be greater than 0 with at most 2 decimal places (and below 1000000000000)",
  ),
  reference: displayLineString(billingLimits.referenceLengthMax).default(""),
});

/**
 * A top-up's optional `Idempotency-Key` header (the IETF httpapi draft's field, as payment APIs use it): a
 * retry with the same key credits the account once.
 */
export const creditHeadersSchema = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(billingLimits.idempotencyKeyLengthMax)
    .regex(/^[\x21-\x7e]+$/, "must be visible ASCII characters")
    .optional()
    .meta({
      description:
        "Any unique string per top-up, such as a UUID: a retry with the same key on the same account credits it once, and answers the balance once that top-up is applied",
    }),
});

export const modelPriceBodySchema = closedBodySchema({
  inputUsdPer1M: unitPriceText,
  outputUsdPer1M: unitPriceText,
  /** Absent: the input price, i.e. no discount for cached input (never billed below the input price). */
  cachedInputUsdPer1M: unitPriceText.optional(),
});

export const discountBodySchema = closedBodySchema({
  model: z.string().min(1).nullable().default(null),
  organizationId: accountIdentifier.nullable().default(null),
  rate: acceptableMoney("0.15", isAcceptableDiscountRate, "must be between 0 and 1, at most 10 decimals"),
});

/**
 * `DELETE /admin/discounts`: the scope whose rule ends, a parameter left out meaning "any". A misspelt
 * parameter is refused rather than read as "any" (which would remove a broader rule), as on every route
 * (middleware/refuse-unknown-query-parameters.ts).
 */
export const discountScopeQuerySchema = z
  .object({
    model: z.string().min(1).optional(),
    organizationId: accountIdentifier.optional(),
  })
  .transform((scope) => ({ model: scope.model ?? null, organizationId: scope.organizationId ?? null }));

export const fxRateBodySchema = closedBodySchema({
  appliesOn: isoDateText,
  rate: acceptableMoney("1483.40", isAcceptableFxRate, "must be above 0, below 1000000, at most 10 decimals"),
  /** Absent: the rate is the rate of `appliesOn` itself. */
  rateDate: isoDateText.optional(),
}).refine((body) => body.rateDate === undefined || body.rateDate <= body.appliesOn, {
  message: "must not be after appliesOn",
  path: ["rateDate"],
});

export const billingQuerySchema = z.object({
  account: accountReferenceText,
  format: z.enum(["json", "csv"], { error: "must be json or csv" }).default("json"),
});

export const eventsQuerySchema = z.object({
  stream: z.string().min(1).max(400).optional(),
  /** Continue in log order after this position (a previous ascending page's `next`; `0`: the log's start). */
  after: z.string().optional(),
  /** Continue newest first before this position (a previous descending page's `next`). */
  before: z.string().optional(),
  /** In log order by default; newest first with `order=desc` or when `before` is given. */
  order: z.enum(["asc", "desc"], { error: "must be asc or desc" }).optional(),
  /** Event types, comma-separated: `CreditToppedUp,UsageCharged`. */
  type: z
    .string()
    .max(1_000)
    .transform((text) => text.split(",").map((type) => type.trim()))
    .refine((types) => types.every((type) => (ledgerEventTypes as readonly string[]).includes(type)), {
      error: `must be event types, comma-separated, of: ${ledgerEventTypes.join(", ")}`,
    })
    .optional(),
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${billingLimits.eventsPageSizeMax}` })
    .int()
    .min(1)
    .max(billingLimits.eventsPageSizeMax)
    .default(billingLimits.eventsPageSizeDefault),
});

/**
 * `GET /prices/history` and `GET /discounts/history`: newest first, a page of at most `limit` changes; the
 * page's `nextCursor` passed back as `cursor` reads the next.
 */
const historyPage = {
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${billingLimits.pricingHistoryRowsMax}` })
    .int()
    .min(1)
    .max(billingLimits.pricingHistoryRowsMax)
    .default(billingLimits.pricingHistoryRowsDefault),
  cursor: z.string().min(1).max(1_000).optional(),
};

export const priceHistoryQuerySchema = z.object({
  /** Absent: every model of the catalog. */
  model: storableString.optional(),
  ...historyPage,
});

export const discountHistoryQuerySchema = z.object(historyPage);

/** `GET /fx-rates`: newest first, every rate (up to the maximum) unless `limit` says fewer, a page at a time. */
export const fxRateHistoryQuerySchema = z.object({
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${billingLimits.fxRateHistoryRowsMax}` })
    .int()
    .min(1)
    .max(billingLimits.fxRateHistoryRowsMax)
    .default(billingLimits.fxRateHistoryRowsMax),
  cursor: z.string().min(1).max(1_000).optional(),
});
