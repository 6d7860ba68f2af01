import { z } from "zod";
import { keyLimitBounds } from "../../kernel/limits";
import { creditDecimalPlaces, formatMoney, isDecimalString, parseMoney } from "../../kernel/money";
import { allowedModelsBodySchema } from "../../keys/allowed-models";
import type { KeyLimits } from "../../keys/api-key-limits";
import { closedBodySchema } from "../wire/closed-object-schema";

/** The bodies that set a key's limits and an organization's key defaults, for a session or an admin. */

const spendLimitWon = z
  .string({ error: 'must be a decimal string such as "50000", or null' })
  // abort: the checks below parse the text, and zod runs every refinement unless one aborts.
  .refine(isDecimalString, { error: 'must be a decimal string such as "50000", or null', abort: true })
  .refine((text) => parseMoney(text).greaterThan(0), "must be more than 0")
  .refine(
    (text) => parseMoney(text).decimalPlaces() <= creditDecimalPlaces,
    `must have at most ${creditDecimalPlaces} decimal places`,
  )
  .refine(
    (text) => parseMoney(text).lessThanOrEqualTo(keyLimitBounds.spendLimitWonMax),
    `must be at most ${keyLimitBounds.spendLimitWonMax}`,
  )
  .transform((text) => formatMoney(parseMoney(text)));

/**
 * `PUT …/limits`: the key's limits from now on. A field left out or null is no limit, so the body states
 * every limit the key has (PUT replaces); `{}` clears them all, as `DELETE …/limits` does. `allowedModels`
 * left out or null: the key may call every model. Closed, as every body: a misspelt limit would otherwise
 * read as no limit.
 */
export const keyLimitsBodySchema = closedBodySchema({
  monthlySpendLimitWon: spendLimitWon.nullable().optional(),
  totalSpendLimitWon: spendLimitWon.nullable().optional(),
  rateLimitRequestsPerMinute: z
    .number({ error: "must be an integer, or null" })
    .int("must be an integer")
    .min(1, "must be at least 1")
    .max(keyLimitBounds.rateLimitRequestsPerMinuteMax)
    .nullable()
    .optional(),
  allowedModels: allowedModelsBodySchema.nullable().optional(),
}).transform(
  (body): KeyLimits => ({
    monthlySpendLimitWon: body.monthlySpendLimitWon ?? null,
    totalSpendLimitWon: body.totalSpendLimitWon ?? null,
    rateLimitRequestsPerMinute: body.rateLimitRequestsPerMinute ?? null,
    allowedModels: body.allowedModels ?? null,
  }),
);

/** `PUT …/key-defaults`: `allowedModels` as a key's (null or left out: every model). */
export const organizationKeyDefaultsBodySchema = closedBodySchema({
  allowedModels: allowedModelsBodySchema.nullable().optional(),
}).transform((body) => ({ allowedModels: body.allowedModels ?? null }));
