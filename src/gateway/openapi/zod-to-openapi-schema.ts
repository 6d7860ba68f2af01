import { z } from "zod";

/** A JSON Schema object as OpenAPI 3.1 embeds it (JSON Schema 2020-12). */
export type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as the JSON Schema of what a client sends (`input`) or receives (`output`), through zod 4's
 * own converter. Refinements have no JSON Schema form and are left to the prose; a `z.preprocess` in these
 * request schemas always turns a string shorthand into the full form, so its input is "string or the full
 * form".
 */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const converted = z.toJSONSchema(schema, {
    io,
    target: "draft-2020-12",
    unrepresentable: "any",
    override: (context) => {
      const definition = context.zodSchema._zod.def as {
        type: string;
        in?: { _zod: { def: { type: string } } };
      };
      if (io === "input" && definition.type === "pipe" && definition.in?._zod.def.type === "transform") {
        const fullForm = { ...context.jsonSchema };
        for (const key of Object.keys(context.jsonSchema)) delete context.jsonSchema[key];
        context.jsonSchema.anyOf = [{ type: "string" }, fullForm];
      }
    },
  }) as JsonSchema;
  delete converted.$schema;
  return converted;
}

/** The properties of an object schema as OpenAPI parameters (query, path or header). */
export function parametersOf(
  schema: z.ZodType,
  location: "query" | "path" | "header",
): {
  name: string;
  in: "query" | "path" | "header";
  required: boolean;
  schema: JsonSchema;
  description?: string;
}[] {
  const converted = jsonSchemaOf(schema, "input");
  const properties = (converted.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((converted.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: location,
    required: location === "path" || required.has(name),
    schema: property,
  }));
}
