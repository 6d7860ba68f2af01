import { z } from "zod";
import { isInstantInRange } from "../../kernel/instant-range";
import { isIsoDate, startInstantOfSeoulDate } from "../../kernel/seoul-calendar";
import { apiErrors, validationErrorOf } from "../api-error";

/**
 * `from` and `to` of a billing query: an instant with its offset ("2026-11-20T09:00:00+09:00") or a date
 * ("2026-11-20"), which means the start of that day in Seoul — billing days are Seoul days (C7). `from` is
 * inclusive, `to` exclusive, so `from=2026-11-01&to=2026-12-01` is exactly November in Seoul.
 */

/**
 * A query's `+` decodes to a space (application/x-www-form-urlencoded), so `…T09:00:00+09:00` typed as is in
 * a URL — the offset every Seoul instant has — arrives as `…T09:00:00 09:00`. A space before the offset of a
 * time can mean nothing else: it is read as the `+` it was.
 */
const offsetPlusDecodedAsSpace = /(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}(?::?\d{2})?)$/;

/**
 * The first Seoul date a range may name, as the first statement month: no charge is older, and the runtime's
 * time-zone data misplaces Seoul's midnights before 1908 (its local mean time, an offset in seconds), so
 * "1900-01-01" was refused as no date at all. An older bound is an instant with its offset.
 */
export const rangeSeoulDateMin = "1970-01-01";

export function isRangeSeoulDate(text: string): boolean {
  return isIsoDate(text) && text >= rangeSeoulDateMin;
}

const instantOrSeoulDate = z
  .string()
  .transform((text) => text.replace(offsetPlusDecodedAsSpace, "$1+$2"))
  .refine(
    (text) => isRangeSeoulDate(text) || z.iso.datetime({ offset: true }).safeParse(text).success,
    `must be a date "YYYY-MM-DD" from ${rangeSeoulDateMin} (a Seoul day) or an ISO 8601 instant with offset`,
  )
  .transform((text) => (isRangeSeoulDate(text) ? startInstantOfSeoulDate(text) : new Date(text)))
  .refine(isInstantInRange, "must lie in the years 1 to 9999");

export const billingRangeSchema = z.object({
  from: instantOrSeoulDate.optional(),
  to: instantOrSeoulDate.optional(),
});

export function billingRangeOf(query: unknown): { from: Date | undefined; to: Date | undefined } {
  const parsed = billingRangeSchema.safeParse(query);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const { from, to } = parsed.data;
  if (from !== undefined && to !== undefined && from.getTime() > to.getTime()) {
    throw apiErrors.validation("from: must not be after to");
  }
  return { from, to };
}
