import { z } from "zod";
import type { FunctionTool, OutputFormat, ToolChoice } from "../../providers/provider";
import { refusedFieldSchema, servedObjectSchema } from "./closed-object-schema";
import { freeFormJsonObjectSchema } from "./free-form-json-schemas";
import { reasoningEffortSchema } from "./generation-parameter-schemas";

/**
 * The responses format's tools, tool choice, `text` and `reasoning`, validated and turned into the internal
 * request's terms. Only function tools are served: the protocol's hosted tools (web search, file search,
 * code interpreter, computer use, MCP, …) run on the upstream's side, and no other upstream protocol could
 * run them, so they are refused by type rather than sent to whichever upstream happens to serve the model.
 */

/** The protocol's bound on a function's name, and the characters it allows. */
const functionNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;
const functionNameSchema = z
  .string({ error: "must be a string" })
  .regex(functionNamePattern, { error: "must be 1 to 64 letters, digits, underscores or dashes" });

const jsonSchemaObjectSchema = freeFormJsonObjectSchema({ error: "must be a JSON Schema object" });

const functionToolSchema = servedObjectSchema(
  {
    type: z.literal("function", {
      error: (issue) =>
        typeof issue.input === "string"
          ? `must be "function": ${issue.input} tools are not supported, only function tools`
          : 'must be "function"',
    }),
    name: functionNameSchema,
    description: z.string({ error: "must be a string" }).nullish(),
    parameters: jsonSchemaObjectSchema.nullish(),
    strict: z.boolean({ error: "must be a boolean" }).nullish(),
  },
  "must be an object with type and name",
);

export const toolsSchema = z
  .array(functionToolSchema, { error: "must be an array of tools" })
  .superRefine((tools, context) => {
    const seen = new Set<string>();
    tools.forEach((tool, index) => {
      if (seen.has(tool.name))
        context.addIssue({
          code: "custom",
          path: [index, "name"],
          message: `"${tool.name}" is defined twice`,
        });
      seen.add(tool.name);
    });
  })
  .nullish();

export function functionToolsOf(tools: z.output<typeof toolsSchema>): FunctionTool[] | undefined {
  if (tools == null || tools.length === 0) return undefined;
  return tools.map((tool) => ({
    name: tool.name,
    ...(tool.description != null && { description: tool.description }),
    ...(tool.parameters != null && { parameters: tool.parameters }),
    ...(tool.strict != null && { strict: tool.strict }),
  }));
}

const toolChoiceModes = ["auto", "none", "required"] as const;

export const toolChoiceSchema = z
  .union(
    [z.enum(toolChoiceModes), servedObjectSchema({ type: z.literal("function"), name: functionNameSchema })],
    { error: 'must be "auto", "none", "required" or { type: "function", name }' },
  )
  .nullish();

export function toolChoiceOf(choice: z.output<typeof toolChoiceSchema>): ToolChoice | undefined {
  if (choice == null) return undefined;
  return typeof choice === "string" ? choice : { name: choice.name };
}

const jsonSchemaFormatSchema = servedObjectSchema({
  type: z.literal("json_schema"),
  name: functionNameSchema,
  schema: jsonSchemaObjectSchema,
  description: z.string({ error: "must be a string" }).nullish(),
  strict: z.boolean({ error: "must be a boolean" }).nullish(),
});

const formatSchema = z.discriminatedUnion(
  "type",
  [
    servedObjectSchema({ type: z.literal("text") }),
    servedObjectSchema({ type: z.literal("json_object") }),
    jsonSchemaFormatSchema,
  ],
  { error: 'must be an object whose type is "text", "json_object" or "json_schema"' },
);

export const textConfigSchema = servedObjectSchema({
  format: formatSchema.nullish(),
  verbosity: refusedFieldSchema("not supported: the gateway carries no verbosity setting to any upstream"),
}).nullish();

/**
 * `{ type: "text" }` is the format's default, free text, which every upstream returns unasked: it is
 * honoured by sending nothing, so a client that spells the default out is not refused by a protocol
 * without structured output.
 */
export function outputFormatOf(text: z.output<typeof textConfigSchema>): OutputFormat | undefined {
  const format = text?.format;
  if (format == null) return undefined;
  switch (format.type) {
    case "text":
      return undefined;
    case "json_object":
      return { type: format.type };
    case "json_schema":
      return {
        type: "json_schema",
        name: format.name,
        schema: format.schema,
        ...(format.description != null && { description: format.description }),
        ...(format.strict != null && { strict: format.strict }),
      };
    default: {
      const unknownFormat: never = format;
      throw new Error(`unknown text format ${JSON.stringify(unknownFormat)}`);
    }
  }
}

export const reasoningSchema = servedObjectSchema({
  effort: reasoningEffortSchema,
  summary: refusedFieldSchema("not supported: the gateway returns no reasoning items to summarise"),
  generate_summary: refusedFieldSchema("not supported: the gateway returns no reasoning items to summarise"),
}).nullish();
