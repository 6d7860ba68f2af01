import type { FunctionTool, OutputFormat, ToolChoice } from "../provider";

/** Tools, the tool choice and the output format in the protocol's own words. */

export interface ChatCompletionsTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export type ChatCompletionsToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; function: { name: string } };

export type ChatCompletionsResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      json_schema: { name: string; schema: Record<string, unknown>; description?: string; strict?: boolean };
    };

export function convertToChatCompletionsTools(tools: readonly FunctionTool[]): ChatCompletionsTool[] {
  return tools.map(({ name, description, parameters, strict }) => ({
    type: "function",
    function: {
      name,
      ...(description !== undefined && { description }),
      ...(parameters !== undefined && { parameters }),
      ...(strict !== undefined && { strict }),
    },
  }));
}

export function convertToChatCompletionsToolChoice(choice: ToolChoice): ChatCompletionsToolChoice {
  return typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
}

export function convertToChatCompletionsResponseFormat(format: OutputFormat): ChatCompletionsResponseFormat {
  switch (format.type) {
    case "text":
    case "json_object":
      return { type: format.type };
    case "json_schema": {
      const { name, schema, description, strict } = format;
      return {
        type: "json_schema",
        json_schema: {
          name,
          schema,
          ...(description !== undefined && { description }),
          ...(strict !== undefined && { strict }),
        },
      };
    }
    default: {
      const unknownFormat: never = format;
      throw new Error(`unknown output format ${JSON.stringify(unknownFormat)}`);
    }
  }
}
