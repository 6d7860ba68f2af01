import { z } from "zod";
import type { FunctionTool, OutputFormat, ToolChoice } from "../../providers/provider";
import { closedObjectSchema, servedObjectSchema } from "./closed-object-schema";
import { freeFormJsonObjectSchema } from "./free-form-json-schemas";

/**
 * The chat-completions `tools`, `tool_choice` and `response_format`, validated by the protocol's own rules
 * and read into the internal forms. Only function tools exist upstream in every protocol, so the newer
 * custom tools and allowed-tools choices are refused by name.
 */

/** The protocol's bound on function and schema names. */
const namePattern = /^[a-zA-Z0-9_-]{1,64}$/;
const nameSchema = z
  .string({ error: "must be a string" })
  .regex(namePattern, { error: "must be 1 to 64 letters, digits, underscores or dashes" });

/** The protocol's documented maximum number of functions. */
export const toolsMax = 128;

const jsonSchemaObject = freeFormJsonObjectSchema({ error: "must be a JSON Schema object" });

/**
 * Closed, as the responses format's tools are: a tool is written by its caller, never echoed back from a
 * reply, so a field it does not have is a mistake to name (`paramters` would otherwise send the function
 * with no parameters at all, C12).
 */
const unknownToolField = "is not a field of a function tool";

// One kind of tool, discriminated by its type: a custom tool (`{"type": "custom", "custom": …}`) is told it is
// no function tool, not that `custom` is a field a function tool lacks.
const functionToolSchema = z.discriminatedUnion(
  "type",
  [
    closedObjectSchema(
      {
        type: z.literal("function"),
        function: closedObjectSchema(
          {
            name: nameSchema,
            description: z.string({ error: "must be a string" }).nullish(),
            parameters: jsonSchemaObject.nullish(),
            strict: z.boolean({ error: "must be a boolean" }).nullish(),
          },
          { error: "must be an object with name", unknownField: unknownToolField },
        ),
      },
      { error: "must be an object with type and function", unknownField: unknownToolField },
    ),
  ],
  {
    error: (issue) =>
      issue.code === "invalid_union"
        ? 'must be "function": only function tools are supported'
        : "must be an object with type and function",
  },
);

export const toolsSchema = z
  .array(functionToolSchema, { error: "must be an array of tools" })
  .max(toolsMax, { error: `must have at most ${toolsMax} tools` })
  .superRefine((tools, context) => {
    const seen = new Set<string>();
    for (const [index, tool] of tools.entries()) {
      if (seen.has(tool.function.name))
        context.addIssue({
          code: "custom",
          path: [index, "function", "name"],
          message: "is already a tool's name",
        });
      seen.add(tool.function.name);
    }
  })
  .transform((tools) =>
    tools.map(({ function: { name, description, parameters, strict } }): FunctionTool => {
      const tool: FunctionTool = { name };
      if (description != null) tool.description = description;
      if (parameters != null) tool.parameters = parameters;
      if (strict != null) tool.strict = strict;
      return tool;
    }),
  )
  .nullish();

const toolChoiceMessage =
  'must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}';

export const toolChoiceSchema = z
  .union(
    [
      z.enum(["none", "auto", "required"]),
      servedObjectSchema({
        type: z.literal("function"),
        function: servedObjectSchema({ name: z.string() }),
      }),
    ],
    { error: toolChoiceMessage },
  )
  .transform((choice): ToolChoice => (typeof choice === "string" ? choice : { name: choice.function.name }))
  .nullish();

const responseFormatMessage =
  'must be {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {…}}';

export const responseFormatSchema = z
  .discriminatedUnion(
    "type",
    [
      servedObjectSchema({ type: z.literal("text") }),
      servedObjectSchema({ type: z.literal("json_object") }),
      servedObjectSchema({
        type: z.literal("json_schema"),
        json_schema: servedObjectSchema(
          {
            name: nameSchema,
            description: z.string({ error: "must be a string" }).nullish(),
            // Optional in the protocol, but every upstream's structured output needs one to mean anything.
            schema: jsonSchemaObject,
            strict: z.boolean({ error: "must be a boolean" }).nullish(),
          },
          "must be an object with name and schema",
        ),
      }),
    ],
    {
      error: (issue) =>
        issue.code === "invalid_union"
          ? 'must be "text", "json_object" or "json_schema"'
          : responseFormatMessage,
    },
  )
  .transform((format): OutputFormat => {
    if (format.type !== "json_schema") return { type: format.type };
    const { name, description, schema, strict } = format.json_schema;
    const output: OutputFormat = { type: "json_schema", name, schema };
    if (description != null) output.description = description;
    if (strict != null) output.strict = strict;
    return output;
  })
  .nullish();
