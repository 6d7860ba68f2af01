import { textTurnsOf } from "../message-text";
import type { GenerationRequest } from "../provider";

interface TextContent {
  role: "user" | "model";
  parts: { text: string }[];
}

export interface GenerateContentRequestBody {
  contents: TextContent[];
  systemInstruction?: { parts: { text: string }[] };
  generationConfig?: { temperature?: number; topP?: number; maxOutputTokens?: number };
}

/**
 * System messages become `systemInstruction` (one part each, in order); the assistant role is called
 * `model`. The model id is not in the body but in the path. `generationConfig` is sent only when the
 * client set something, so the model's own defaults apply otherwise.
 */
export function convertToGenerateContentRequest(request: GenerationRequest): GenerateContentRequestBody {
  const turns = textTurnsOf(request.messages);
  const systemParts = turns
    .filter((message) => message.role === "system")
    .map((message) => ({ text: message.content }));
  const contents: TextContent[] = turns.flatMap((message) =>
    message.role === "system"
      ? []
      : [{ role: message.role === "assistant" ? "model" : "user", parts: [{ text: message.content }] }],
  );
  const generationConfig = {
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { topP: request.topP }),
    ...(request.maxOutputTokens !== undefined && { maxOutputTokens: request.maxOutputTokens }),
  };
  return {
    contents,
    ...(systemParts.length > 0 && { systemInstruction: { parts: systemParts } }),
    ...(Object.keys(generationConfig).length > 0 && { generationConfig }),
  };
}
