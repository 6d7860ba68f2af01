import { z } from "zod";
import { keyLimitBounds } from "../kernel/limits";
import { findModel, listModels } from "../providers/catalog";

/**
 * The models a key may call (C14, "Models per key"): a list of model slugs and families, a family standing
 * for every model of it, those a models file adds included. Null: every model. Checked before a request's
 * hold, so a refused request holds nothing and sends nothing upstream.
 *
 * C14 names slugs, so an entry that is a model's slug is that model, even where the word also names a family
 * (`epsilon` is both): a family is written `<family>/*` (`epsilon/*`), or by its bare word when no model has
 * that slug (`beta`).
 */

export type AllowedModels = readonly string[] | null;

const familySuffix = "/*";

/** The entry that allows every model of `family`, whatever else the word names. */
export function familyEntryOf(family: string): string {
  return `${family}${familySuffix}`;
}

/** Whether a key limited to `allowedModels` may call `model`. */
export function mayCallModel(
  allowedModels: AllowedModels,
  model: { readonly slug: string; readonly family: string },
): boolean {
  return allowedModels === null || allowedModels.some((entry) => entryAllows(entry, model));
}

function entryAllows(entry: string, model: { readonly slug: string; readonly family: string }): boolean {
  if (entry === model.slug) return true;
  if (entry.endsWith(familySuffix)) return entry.slice(0, -familySuffix.length) === model.family;
  return entry === model.family && findModel(entry) === undefined;
}

/** Of the catalog, the models a key may call, in the catalog's order. */
export function modelsCallableWith<Model extends { readonly slug: string; readonly family: string }>(
  models: readonly Model[],
  allowedModels: AllowedModels,
): Model[] {
  return models.filter((model) => mayCallModel(allowedModels, model));
}

function isCatalogEntry(entry: string): boolean {
  const family = entry.endsWith(familySuffix) ? entry.slice(0, -familySuffix.length) : entry;
  return listModels().some((model) => model.slug === entry || model.family === family);
}

/**
 * `allowedModels` of `PUT …/limits`: a non-empty array of slugs and families the catalog knows, each
 * once (repeats dropped, order kept), or null for every model. An empty list is refused rather than read
 * as "no model": a key that may call nothing is a deactivated key, which its status says.
 */
export const allowedModelsBodySchema = z
  .array(z.string({ error: "must be an array of model slugs or family words, or null" }), {
    error: "must be an array of model slugs or family words, or null",
  })
  .min(1, "must name at least one model or family (null allows every model)")
  .max(keyLimitBounds.allowedModelsMax, `must name at most ${keyLimitBounds.allowedModelsMax} models`)
  .superRefine((entries, context) => {
    for (const [index, entry] of entries.entries()) {
      if (!isCatalogEntry(entry))
        context.addIssue({
          code: "custom",
          path: [index],
          message: `'${entry}' is neither a model nor a model family; GET /llm/v1/models lists the models`,
        });
    }
  })
  .transform((entries) => [...new Set(entries)]);
