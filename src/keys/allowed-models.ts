import { z } from "zod";
import { keyLimitBounds } from "../kernel/limits";
import { listModels } from "../providers/catalog";

/**
 * The models a key may call (C14, "Models per key"): a list of model slugs and family words, a family word
 * (`alpha` … `zeta`) standing for every model of that family, those a models file adds included. Null: every
 * model. Checked before a request's hold, so a refused request holds nothing and sends nothing upstream.
 */

export type AllowedModels = readonly string[] | null;

/** Whether a key limited to `allowedModels` may call `model`. */
export function mayCallModel(
  allowedModels: AllowedModels,
  model: { readonly slug: string; readonly family: string },
): boolean {
  return (
    allowedModels === null || allowedModels.some((entry) => entry === model.slug || entry === model.family)
  );
}

/** Of the catalog, the models a key may call, in the catalog's order. */
export function modelsCallableWith<Model extends { readonly slug: string; readonly family: string }>(
  models: readonly Model[],
  allowedModels: AllowedModels,
): Model[] {
  return models.filter((model) => mayCallModel(allowedModels, model));
}

function isCatalogEntry(entry: string): boolean {
  return listModels().some((model) => model.slug === entry || model.family === entry);
}

/**
 * `allowedModels` of `PUT …/limits`: a non-empty array of slugs and family words the catalog knows, each
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
