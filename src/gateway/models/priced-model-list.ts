import type { ModelPriceList, ModelPricing } from "../../billing/read-models/model-price-list";
import { type AllowedModels, modelsCallableWith } from "../../keys/allowed-models";
import { listModels } from "../../providers/catalog";

/**
 * The model objects of `GET /models` (C5) with each model's price for the caller as an extra `pricing`
 * field; OpenAI-style clients ignore fields they do not know. Shared by the API-key route (/llm/v1/models)
 * and the console's session route (/llm/models).
 */

export interface PricedModel {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
  /** null: the model cannot be priced now (no FX rate yet, or the ledger unreachable). */
  pricing: ModelPricing | null;
}

/** `allowedModels`: an API key's (C14), of which only the models it may call are listed; null: every model. */
export async function pricedModels(
  prices: ModelPriceList,
  organizationId: string | null,
  allowedModels: AllowedModels = null,
): Promise<PricedModel[]> {
  const pricing = await prices.pricesFor(organizationId);
  return modelsCallableWith(listModels(), allowedModels).map((model) => ({
    id: model.slug,
    object: "model",
    created: model.created,
    owned_by: model.family,
    pricing: pricing.get(model.slug) ?? null,
  }));
}
