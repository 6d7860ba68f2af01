import type { GenerationParameter, GenerationRequest } from "../../providers/provider";

/**
 * A client request in either format, validated and reduced to what the gateway acts on: the internal
 * request's fields, less the upstream id. Optional parameters are absent when the client did not send them,
 * so that the upstream's own defaults apply (temperature 1.0 and top_p 1.0, as interface.md states) and a
 * default is never sent as if asked for.
 */
export interface ParsedGenerationRequest extends Omit<GenerationRequest, "upstreamModelId"> {
  /** The public slug as sent; the edge looks it up (unknown: 404/120). */
  model: string;
  stream: boolean;
}

/** How each format names the parameters, for errors that name the client's own field (C12). */
export type ClientParameterNames = Readonly<Record<GenerationParameter, string>>;

type OptionalParameters = Pick<ParsedGenerationRequest, "temperature" | "topP" | "maxOutputTokens">;

/**
 * Optional parameters as the schema gave them: `null` and `undefined` both mean "not sent" (clients built on
 * the protocol's own schema send explicit nulls for unset options) and leave the key out altogether.
 */
export function parsedGenerationRequestOf(
  required: Pick<ParsedGenerationRequest, "model" | "messages" | "stream">,
  optional: Record<keyof OptionalParameters, number | null | undefined>,
): ParsedGenerationRequest {
  const request: ParsedGenerationRequest = { ...required };
  if (optional.temperature != null) request.temperature = optional.temperature;
  if (optional.topP != null) request.topP = optional.topP;
  if (optional.maxOutputTokens != null) request.maxOutputTokens = optional.maxOutputTokens;
  return request;
}
