import type { CatalogModel } from "../../providers/catalog";
import type { GenerationRequest, SamplingParameter } from "../../providers/provider";
import { apiErrors } from "../api-error";
import type { ParsedGenerationRequest } from "./parsed-generation-request";

/**
 * The upstream request of a validated client request, for either format. A parameter the model ignores
 * (catalog `ignoredParameters`) was validated like any other and is now left out (C5); a parameter the
 * client did not send stays absent.
 */
export function toGenerationRequest(parsed: ParsedGenerationRequest, model: CatalogModel): GenerationRequest {
  if (parsed.model !== model.slug) {
    throw new Error(`request for ${parsed.model} paired with catalog model ${model.slug}`);
  }
  const request: GenerationRequest = { upstreamModelId: model.upstreamModelId, messages: parsed.messages };
  if (parsed.temperature !== undefined && sends(model, "temperature"))
    request.temperature = parsed.temperature;
  if (parsed.topP !== undefined && sends(model, "top_p")) request.topP = parsed.topP;
  if (parsed.maxOutputTokens !== undefined) {
    // A cap from the models file: a larger ask cannot be honoured, so it is refused rather than cut (C12).
    if (model.maxOutputTokensMax !== undefined && parsed.maxOutputTokens > model.maxOutputTokensMax)
      throw apiErrors.validation(
        `max output tokens: must be at most ${model.maxOutputTokensMax} for ${model.slug}`,
      );
    request.maxOutputTokens = parsed.maxOutputTokens;
  }
  return request;
}

function sends(model: CatalogModel, parameter: SamplingParameter): boolean {
  return !model.ignoredParameters.includes(parameter);
}
