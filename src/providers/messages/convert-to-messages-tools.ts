import type { FunctionTool, GenerationRequest } from "../provider";

export interface MessagesTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  strict?: boolean;
}

export type MessagesToolChoice =
  | { type: "auto" | "any"; disable_parallel_tool_use?: true }
  | { type: "tool"; name: string; disable_parallel_tool_use?: true }
  | { type: "none" };

export interface MessagesToolFields {
  tools?: MessagesTool[];
  tool_choice?: MessagesToolChoice;
  /** The tool whose input is the reply's JSON text (json_object output), when there is one. */
  answerToolName: string | undefined;
}

/** The protocol requires an input schema; a function declared without parameters takes none. */
const noParametersSchema = { type: "object", properties: {} };

/**
 * `json_object` output has no native form in this protocol: its structured output takes only a closed
 * JSON Schema (every object `additionalProperties: false`), so "any object" would allow only {}. The
 * protocol's documented alternative is a tool whose input is the answer, forced with tool_choice: the
 * reply's text is then that tool's input (see convert-messages-response / -stream).
 */
const answerToolBaseName = "json_answer";
const answerToolDescription = "Give the complete answer as a JSON object: the input is the answer.";

/**
 * tools → {name, description, input_schema}; toolChoice auto → auto, required → any, a name → tool, none
 * → none; parallelToolCalls false → `disable_parallel_tool_use` on the choice (the protocol has no other
 * place for it; `none` makes no calls, so it needs none). `strict` is the protocol's own tool field of the
 * same meaning (inputs guaranteed valid against the schema); schemas pass through as given.
 */
export function convertToMessagesTools(request: GenerationRequest): MessagesToolFields {
  const tools = (request.tools ?? []).map(toolOf);
  const answerToolName =
    request.outputFormat?.type === "json_object" ? freeName(answerToolBaseName, tools) : undefined;
  if (answerToolName !== undefined)
    tools.push({
      name: answerToolName,
      description: answerToolDescription,
      input_schema: { type: "object" },
    });
  const choice = toolChoiceOf(request, answerToolName);
  return {
    ...(tools.length > 0 && { tools }),
    ...(choice && { tool_choice: choice }),
    answerToolName,
  };
}

function toolOf(tool: FunctionTool): MessagesTool {
  return {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    input_schema: tool.parameters ?? noParametersSchema,
    ...(tool.strict !== undefined && { strict: tool.strict }),
  };
}

/**
 * With an answer tool the model must end in a tool: `auto` and `required` become `any` (a client tool or
 * the answer), `none` forces the answer tool, a named tool stays named.
 */
function toolChoiceOf(
  request: GenerationRequest,
  answerToolName: string | undefined,
): MessagesToolChoice | undefined {
  const noParallel = request.parallelToolCalls === false ? { disable_parallel_tool_use: true as const } : {};
  const choice = request.toolChoice;
  if (answerToolName !== undefined) {
    if (choice === "none") return { type: "tool", name: answerToolName, ...noParallel };
    if (typeof choice === "object") return { type: "tool", name: choice.name, ...noParallel };
    return { type: "any", ...noParallel };
  }
  if (choice === undefined)
    return request.parallelToolCalls === false && (request.tools ?? []).length > 0
      ? { type: "auto", ...noParallel }
      : undefined;
  if (choice === "none") return { type: "none" };
  if (choice === "auto") return { type: "auto", ...noParallel };
  if (choice === "required") return { type: "any", ...noParallel };
  return { type: "tool", name: choice.name, ...noParallel };
}

function freeName(base: string, tools: readonly MessagesTool[]): string {
  const taken = new Set(tools.map((tool) => tool.name));
  let name = base;
  for (let suffix = 2; taken.has(name); suffix += 1) name = `${base}_${suffix}`;
  return name;
}
