import {
  type GenerationRequest,
  type OutputFormat,
  type ReasoningEffort,
  UnsupportedRequestError,
} from "../provider";

type ThinkingLevel = "MINIMAL" | "LOW" | "MEDIUM" | "HIGH";

export interface GenerateContentGenerationConfig {
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseMimeType?: "application/json";
  responseJsonSchema?: Record<string, unknown>;
  thinkingConfig?: { thinkingLevel: ThinkingLevel };
}

/**
 * Reasoning effort as `thinkingLevel`, the control of this protocol's current (third-generation) models,
 * which the protocol documents as replacing `thinkingBudget` for them (a budget is kept only for
 * compatibility, and both together are refused). These models cannot stop thinking altogether: `minimal` is
 * documented as the no-thinking setting, so `none` asks for it too. Nothing is above `high`, so `xhigh`
 * cannot be honoured and is refused.
 */
const thinkingLevels: Readonly<Record<Exclude<ReasoningEffort, "xhigh">, ThinkingLevel>> = {
  none: "MINIMAL",
  minimal: "MINIMAL",
  low: "LOW",
  medium: "MEDIUM",
  high: "HIGH",
};

/** Only what the client set, so the model's own defaults apply to the rest. */
export function convertToGenerateContentConfig(request: GenerationRequest): GenerateContentGenerationConfig {
  return {
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { topP: request.topP }),
    ...(request.maxOutputTokens !== undefined && { maxOutputTokens: request.maxOutputTokens }),
    ...(request.stop !== undefined && { stopSequences: request.stop }),
    ...(request.seed !== undefined && { seed: request.seed }),
    ...(request.presencePenalty !== undefined && { presencePenalty: request.presencePenalty }),
    ...(request.frequencyPenalty !== undefined && { frequencyPenalty: request.frequencyPenalty }),
    ...(request.outputFormat !== undefined && outputFormatConfigOf(request.outputFormat)),
    ...(request.reasoningEffort !== undefined && {
      thinkingConfig: { thinkingLevel: thinkingLevelOf(request.reasoningEffort) },
    }),
  };
}

/**
 * JSON output through `responseMimeType`; a schema through `responseJsonSchema`, which takes JSON Schema as
 * the client wrote it (`responseSchema` takes only an OpenAPI subset). The protocol always holds the output
 * to the schema, so `strict` is honoured either way; the format's name and description have no field.
 */
function outputFormatConfigOf(format: OutputFormat): GenerateContentGenerationConfig {
  switch (format.type) {
    case "text":
      return {};
    case "json_object":
      return { responseMimeType: "application/json" };
    case "json_schema":
      return { responseMimeType: "application/json", responseJsonSchema: format.schema };
    default: {
      const unreachable: never = format;
      throw new Error(`unknown output format ${JSON.stringify(unreachable)}`);
    }
  }
}

function thinkingLevelOf(effort: ReasoningEffort): ThinkingLevel {
  if (effort === "xhigh") {
    throw new UnsupportedRequestError(
      'reasoning effort "xhigh": not supported by this model, whose highest effort is "high"',
    );
  }
  return thinkingLevels[effort];
}
