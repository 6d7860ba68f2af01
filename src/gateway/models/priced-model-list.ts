import type { ModelPriceList, ModelPricing } from "../../billing/read-models/model-price-list";
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

export async function pricedModels(
  prices: ModelPriceList,
  organizationId: string | null,
): Promise<PricedModel[]> {
  const pricing = await prices.pricesFor(organizationId);
  return listModels().map((model) => ({
    id: model.slug,
    object: "model",
    created: model.created,
    owned_by: model.family,
    pricing: pricing.get(model.slug) ?? null,
  }));
}
