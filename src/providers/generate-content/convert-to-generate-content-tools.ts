import { type FunctionTool, type ToolChoice, UnsupportedRequestError } from "../provider";

interface FunctionDeclaration {
  name: string;
  description?: string;
  parametersJsonSchema?: Record<string, unknown>;
}

type FunctionCallingMode = "AUTO" | "ANY" | "NONE" | "VALIDATED";

export interface GenerateContentTools {
  tools?: [{ functionDeclarations: FunctionDeclaration[] }];
  toolConfig?: { functionCallingConfig: { mode: FunctionCallingMode; allowedFunctionNames?: string[] } };
}

/**
 * Functions as one tool of `functionDeclarations`. The client's JSON Schema goes in `parametersJsonSchema`
 * unchanged: `parameters` takes only an OpenAPI subset (no `additionalProperties`, `$ref`, `const`…) and a
 * translation would lose what it cannot say, while the JSON Schema field takes the schema as the client
 * wrote it.
 *
 * The choice: auto is AUTO, or VALIDATED (calls held to their schema) when a function asks to be strict;
 * required is ANY; a named function is ANY limited to that name; none is NONE. Without a choice the
 * protocol's default applies (AUTO), unless strictness asks for VALIDATED.
 *
 * Parallel calls have no switch in this protocol: the model may always make several. Allowing them is what it
 * does; forbidding them cannot be honoured, so `false` is refused.
 */
export function convertToGenerateContentTools(
  tools: readonly FunctionTool[] | undefined,
  toolChoice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): GenerateContentTools {
  if (parallelToolCalls === false) {
    throw new UnsupportedRequestError(
      "parallel_tool_calls: false is not supported by this model, which may always call several tools at once",
    );
  }
  if (tools === undefined || tools.length === 0) return {};
  const strict = tools.some((tool) => tool.strict === true);
  const functionCallingConfig = functionCallingConfigOf(toolChoice, strict);
  return {
    tools: [{ functionDeclarations: tools.map(declarationOf) }],
    ...(functionCallingConfig && { toolConfig: { functionCallingConfig } }),
  };
}

function declarationOf(tool: FunctionTool): FunctionDeclaration {
  return {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    ...(tool.parameters !== undefined && { parametersJsonSchema: tool.parameters }),
  };
}

function functionCallingConfigOf(
  toolChoice: ToolChoice | undefined,
  strict: boolean,
): { mode: FunctionCallingMode; allowedFunctionNames?: string[] } | undefined {
  switch (toolChoice) {
    case undefined:
      return strict ? { mode: "VALIDATED" } : undefined;
    case "auto":
      return { mode: strict ? "VALIDATED" : "AUTO" };
    case "required":
      return { mode: "ANY" };
    case "none":
      return { mode: "NONE" };
    default:
      return { mode: "ANY", allowedFunctionNames: [toolChoice.name] };
  }
}
