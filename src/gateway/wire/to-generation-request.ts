import type { CatalogModel } from "../../providers/catalog";
import { protocolParameters, protocolTemperatureMaximum } from "../../providers/protocol-parameters";
import type { GenerationParameter, GenerationRequest, SamplingParameter } from "../../providers/provider";
import { apiErrors } from "../api-error";
import type { ClientParameterNames, ParsedGenerationRequest } from "./parsed-generation-request";

/**
 * The upstream request of a validated client request, for either format. A parameter the model ignores
 * (catalog `ignoredParameters`) was validated like any other and is now left out (C5); a parameter the
 * client did not send stays absent; a parameter the model's protocol cannot carry, or not at that value, is
 * refused, naming the client's field (C12).
 */
export function toGenerationRequest(
  parsed: ParsedGenerationRequest,
  model: CatalogModel,
  names: ClientParameterNames,
): GenerationRequest {
  if (parsed.model !== model.slug) {
    throw new Error(`request for ${parsed.model} paired with catalog model ${model.slug}`);
  }
  const { model: _slug, stream: _stream, temperature, topP, maxOutputTokens, messages, ...rest } = parsed;
  const request: GenerationRequest = { upstreamModelId: model.upstreamModelId, messages };
  if (temperature !== undefined && sends(model, "temperature")) {
    const temperatureMaximum = protocolTemperatureMaximum[model.protocol];
    if (temperature > temperatureMaximum)
      throw apiErrors.validation(
        `temperature: must be from 0 to ${temperatureMaximum} inclusive for ${model.slug}`,
      );
    request.temperature = temperature;
  }
  if (topP !== undefined && sends(model, "top_p")) request.topP = topP;
  if (maxOutputTokens !== undefined) {
    // A cap from the models file: a larger ask cannot be honoured, so it is refused rather than cut (C12).
    if (model.maxOutputTokensMax !== undefined && maxOutputTokens > model.maxOutputTokensMax)
      throw apiErrors.validation(
        `max output tokens: must be at most ${model.maxOutputTokensMax} for ${model.slug}`,
      );
    request.maxOutputTokens = maxOutputTokens;
  }
  const carried = protocolParameters[model.protocol];
  const refuse = (parameter: GenerationParameter) => {
    if (!carried.has(parameter))
      throw apiErrors.validation(`${names[parameter]}: not supported by ${model.slug}`);
  };
  for (const [parameter, value] of Object.entries(rest) as [GenerationParameter, unknown][])
    if (value !== undefined) refuse(parameter);
  const images = messages.flatMap((message) =>
    message.role === "user" ? message.content.filter((part) => part.type === "image") : [],
  );
  if (images.length > 0) refuse("images");
  // "auto" is what every protocol does unasked; "low" or "high" changes what the image costs and shows.
  const detail = images.find((image) => image.detail === "low" || image.detail === "high")?.detail;
  if (detail !== undefined && !carried.has("imageDetail"))
    throw apiErrors.validation(
      `${names.imageDetail}: "${detail}" is not supported by ${model.slug}, which takes images at its own resolution; send "auto" or leave it out`,
    );
  if (messages.some((message) => message.role !== "tool" && message.name !== undefined))
    refuse("participantNames");
  return { ...request, ...rest };
}

function sends(model: CatalogModel, parameter: SamplingParameter): boolean {
  return !model.ignoredParameters.includes(parameter);
}
