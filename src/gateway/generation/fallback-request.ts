import type { CatalogModel } from "../../providers/catalog";
import { type GenerationRequest, UnsupportedRequestError } from "../../providers/provider";
import { ApiError } from "../api-error";
import type { ParsedGenerationRequest } from "../wire/parsed-generation-request";
import type { ClientFormat } from "./client-format";

/**
 * The request as a fallback model would take it (its upstream id, its ignored parameters), or null when
 * that model refuses something the requested one accepted (a parameter its protocol cannot carry, an
 * output cap below the request's): the fallback is skipped rather than the request failed for it.
 */
export function fallbackRequestOf(
  format: ClientFormat,
  parsed: ParsedGenerationRequest,
  fallback: CatalogModel,
): GenerationRequest | null {
  try {
    return format.toGenerationRequest({ ...parsed, model: fallback.slug }, fallback);
  } catch (error) {
    if (error instanceof ApiError || error instanceof UnsupportedRequestError) return null;
    throw error;
  }
}
