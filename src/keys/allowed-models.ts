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
  if (allowedModels === null) return true;
  const allowing = entriesAllowing(model);
  return allowedModels.some((entry) => allowing.includes(entry));
}

/**
 * Every entry of an allowed-models list that allows `model`: its slug, its family's `<family>/*`, and its
 * family's bare word when no model has that slug. A list allows the model when it holds one of them (the
 * hold statement asks so too, src/ledger/schema/holds/ledger-authorize-usage.ts).
 */
export function entriesAllowing(model: { readonly slug: string; readonly family: string }): string[] {
  return [
    model.slug,
    familyEntryOf(model.family),
    ...(findModel(model.family) === undefined ? [model.family] : []),
  ];
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
