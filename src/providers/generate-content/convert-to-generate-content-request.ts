import type { GenerationRequest } from "../provider";
import {
  convertToGenerateContentConfig,
  type GenerateContentGenerationConfig,
} from "./convert-to-generate-content-config";
import {
  convertToGenerateContentContents,
  type GenerateContentContent,
} from "./convert-to-generate-content-contents";
import {
  convertToGenerateContentTools,
  type GenerateContentTools,
} from "./convert-to-generate-content-tools";

export interface GenerateContentRequestBody extends GenerateContentTools {
  contents: GenerateContentContent[];
  systemInstruction?: { parts: { text: string }[] };
  generationConfig?: GenerateContentGenerationConfig;
}

/**
 * System messages become `systemInstruction` (one part each, in order). The model id is not in the body but
 * in the path. `generationConfig` is sent only when the client set something in it. The end user's id and
 * metadata have no field in this protocol and are refused before any call (protocol-parameters.ts).
 */
export function convertToGenerateContentRequest(request: GenerationRequest): GenerateContentRequestBody {
  const systemParts = request.messages.flatMap((message) =>
    message.role === "system" ? [{ text: message.content }] : [],
  );
  const generationConfig = convertToGenerateContentConfig(request);
  return {
    contents: convertToGenerateContentContents(request.messages),
    ...(systemParts.length > 0 && { systemInstruction: { parts: systemParts } }),
    ...convertToGenerateContentTools(request.tools, request.toolChoice, request.parallelToolCalls),
    ...(Object.keys(generationConfig).length > 0 && { generationConfig }),
  };
}
