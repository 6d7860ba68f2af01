import type { SimulatedMessage } from "../simulated-completion";
import type { SimulationInput } from "../simulated-protocol";
import type { SimulatedOutputFormat, SimulatedToolChoice } from "../simulated-turn";
import type { GenerateContentPart, GenerateContentRequest } from "./request-schemas";

type TurnInput = Pick<SimulationInput, "tools" | "toolChoice" | "outputFormat" | "imageCount"> & {
  messages: SimulatedMessage[];
};

/**
 * A generateContent request as the simulated model sees it: `model` turns are the assistant's, a
 * `functionResponse` part is a tool result (its response object as the text), inline and file data are
 * images, `toolConfig` is the tool choice and a JSON response type with or without a schema the output
 * format. The protocol has no switch for parallel calls: the model may always make several.
 */
export function generateContentTurnInput(request: GenerateContentRequest): TurnInput {
  const messages: SimulatedMessage[] = request.systemInstruction
    ? [{ role: "system", text: textOf(request.systemInstruction.parts) }]
    : [];
  let imageCount = 0;
  for (const content of request.contents) {
    const results = content.parts.flatMap((part) => (part.functionResponse ? [part.functionResponse] : []));
    for (const result of results) messages.push({ role: "tool", text: JSON.stringify(result.response) });
    imageCount += content.parts.filter((part) => part.inlineData || part.fileData).length;
    if (results.length === content.parts.length) continue;
    // The simulated answer is keyed on the chat roles, so `model` reads as `assistant`.
    messages.push({ role: content.role === "model" ? "assistant" : "user", text: textOf(content.parts) });
  }
  const callingConfig = request.toolConfig?.functionCallingConfig;
  // Under ANY with several allowed names, the model calls only among those.
  const allowed = callingConfig?.mode === "ANY" ? callingConfig.allowedFunctionNames : undefined;
  const declarations = (request.tools?.flatMap((tool) => tool.functionDeclarations) ?? []).filter(
    (declaration) => allowed === undefined || allowed.includes(declaration.name),
  );
  const outputFormat = outputFormatOf(request.generationConfig);
  return {
    messages,
    imageCount,
    tools: declarations.map((declaration) => ({
      name: declaration.name,
      parameters: declaration.parametersJsonSchema ?? declaration.parameters,
    })),
    toolChoice: toolChoiceOf(callingConfig),
    ...(outputFormat && { outputFormat }),
  };
}

function textOf(parts: readonly GenerateContentPart[]): string {
  return parts
    .filter((part) => part.thought !== true)
    .map((part) => part.text ?? "")
    .join("");
}

function toolChoiceOf(
  config: { mode?: string | undefined; allowedFunctionNames?: string[] | undefined } | undefined,
): SimulatedToolChoice {
  switch (config?.mode) {
    case "NONE":
      return "none";
    case "ANY": {
      const allowed = config.allowedFunctionNames ?? [];
      return allowed.length === 1 ? { name: allowed[0]! } : "required";
    }
    default:
      return "auto";
  }
}

function outputFormatOf(
  config: GenerateContentRequest["generationConfig"],
): SimulatedOutputFormat | undefined {
  if (config?.responseMimeType !== "application/json") return undefined;
  const schema = config.responseJsonSchema ?? config.responseSchema;
  return schema ? { type: "json_schema", schema } : { type: "json_object" };
}

/**
 * Thinking models refuse a replayed call of the current turn (the model turns since the user's last own
 * message) whose first call has lost its thought signature: the simulator checks it as they do.
 */
export function missingThoughtSignature(request: GenerateContentRequest): string | undefined {
  const lastUserMessage = request.contents.findLastIndex(
    (content) => content.role !== "model" && content.parts.some((part) => !part.functionResponse),
  );
  for (let index = lastUserMessage + 1; index < request.contents.length; index += 1) {
    const content = request.contents[index]!;
    if (content.role !== "model") continue;
    const firstCall = content.parts.find((part) => part.functionCall);
    if (firstCall?.functionCall && firstCall.thoughtSignature === undefined) {
      return (
        `Function call \`${firstCall.functionCall.name}\` in the ${index + 1}. content block is missing a ` +
        "`thought_signature`. Learn more: https://ai.google.dev/gemini-api/docs/thought-signatures"
      );
    }
  }
  return undefined;
}
