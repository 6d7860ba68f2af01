import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import { z } from "zod";
import { isAcceptableUnitPrice } from "../kernel/charge-limits";
import { chargeLimits } from "../kernel/limits";
import { canonicalMoney, isDecimalString, parseMoney } from "../kernel/money";
import {
  type CatalogEndpoint,
  type CatalogModel,
  findBuiltInModel,
  type UsdPerMillionTokens,
} from "./catalog";
import type { ModelFamily, SamplingParameter, UpstreamProtocol } from "./provider";

/**
 * MODELS_FILE: models served without a code change. YAML (or JSON, which is YAML) mapping each slug to its
 * family, upstream protocol and model id, optionally its own upstream (base URL and the environment variable
 * holding its key) or several endpoints, fallback models, default prices, an output cap and ignored
 * parameters (docs/upstream-resilience.md for endpoints and fallbacks). A built-in slug listed here is
 * replaced field by field (what is not given keeps the built-in value); a new slug must give its prices.
 * Every field is checked; an unknown field is an error, so a typo never passes silently.
 */

const families = [
  "alpha",
  "beta",
  "gamma",
  "delta",
  "epsilon",
  "zeta",
] as const satisfies readonly ModelFamily[];
const protocols = [
  "chat-completions",
  "responses",
  "messages",
  "generate-content",
] as const satisfies readonly UpstreamProtocol[];
const samplingParameters = ["temperature", "top_p"] as const satisfies readonly SamplingParameter[];

const usdPerMillionTokens = z
  .string({ error: 'must be a decimal string such as "1.25"' })
  .refine(isDecimalString, 'must be a decimal string such as "1.25"')
  // The admin API's bounds: a price seeded from here that a charge cannot take fails every request for it.
  .refine(
    (text) => !isDecimalString(text) || isAcceptableUnitPrice(parseMoney(text)),
    `must be ≥ 0, below ${chargeLimits.unitPriceUsdPerMillionTokensBelow}, at most ${chargeLimits.decimalPlacesMax} decimals`,
  )
  // Money crosses the API in one form (docs/api.md, "Money"): "2.50" is kept, and shown, as "2.5".
  .transform((text) => canonicalMoney(text) as UsdPerMillionTokens);

const environmentVariableName = z
  .string()
  .regex(/^[A-Z][A-Z0-9_]{0,99}$/, "must be an environment variable name such as ACME_API_KEY");

/** A name for metrics, events and the admin view: low-cardinality and free of secrets by construction. */
const endpointName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, "must be lowercase letters, digits, '.', '_' or '-'");

const endpointSchema = z.strictObject({
  name: endpointName,
  baseUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
  /** Default `<FAMILY>_API_KEY`. */
  apiKeyVariable: environmentVariableName.optional(),
  upstreamModelId: z.string().min(1).max(200).optional(),
  weight: z.number().int().min(1).max(1_000).default(1),
  concurrentRequestsMax: z.number().int().positive().optional(),
});

const modelEntrySchema = z.strictObject({
  family: z.enum(families),
  protocol: z.enum(protocols),
  /** The id the upstream knows the model by; default: the slug. */
  upstreamModelId: z.string().min(1).max(200).optional(),
  /** The prefix the protocol's paths are appended to (docs/operations.md, "Models file"); default `<FAMILY>_BASE_URL`. */
  baseUrl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
  /** The environment variable holding this upstream's key; default `<FAMILY>_API_KEY`. */
  apiKeyVariable: environmentVariableName.optional(),
  /** Several endpoints of the model's protocol, in place of baseUrl / apiKeyVariable. */
  endpoints: z.array(endpointSchema).min(1).max(64).optional(),
  /** Models tried in order when every endpoint of this one fails before output. */
  fallbacks: z.array(z.string().min(1)).max(8).optional(),
  prices: z
    .strictObject({
      inputUsdPer1M: usdPerMillionTokens,
      outputUsdPer1M: usdPerMillionTokens,
      /** Default: the input price (no cache discount). */
      cachedInputUsdPer1M: usdPerMillionTokens.optional(),
    })
    .optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  ignoredParameters: z.array(z.enum(samplingParameters)).optional(),
});

const slugSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,99}$/, "must be lowercase letters, digits, '.', '_' or '-'");

export const modelsFileSchema = z.strictObject({
  models: z.record(slugSchema, modelEntrySchema),
});
export type ModelsFile = z.infer<typeof modelsFileSchema>;

export class ModelsFileError extends Error {
  override readonly name = "ModelsFileError";
}

/** One fixed instant for models added by file, like the built-in catalog's. */
const modelsFileCreatedUnixSeconds = 1_767_225_600;

/** The catalog entries of a parsed models file, each checked against the environment it will run in. */
export function modelsOf(file: ModelsFile, environment: NodeJS.ProcessEnv): CatalogModel[] {
  return Object.entries(file.models).map(([slug, entry]) => {
    const builtIn = findBuiltInModel(slug);
    const prices = entry.prices;
    if (!builtIn && !prices) throw new ModelsFileError(`models.${slug}.prices is required for a new model`);
    const upstream = upstreamOf(slug, entry, environment);
    const endpoints = entry.endpoints && endpointsOf(slug, entry, environment);
    return {
      slug,
      family: entry.family,
      protocol: entry.protocol,
      upstreamModelId: entry.upstreamModelId ?? builtIn?.upstreamModelId ?? slug,
      inputUsdPerMillionTokens: prices?.inputUsdPer1M ?? builtIn!.inputUsdPerMillionTokens,
      outputUsdPerMillionTokens: prices?.outputUsdPer1M ?? builtIn!.outputUsdPerMillionTokens,
      cachedInputUsdPerMillionTokens: prices
        ? (prices.cachedInputUsdPer1M ?? prices.inputUsdPer1M)
        : builtIn!.cachedInputUsdPerMillionTokens,
      ignoredParameters: entry.ignoredParameters ?? builtIn?.ignoredParameters ?? [],
      created: builtIn?.created ?? modelsFileCreatedUnixSeconds,
      ...(entry.maxOutputTokens === undefined ? {} : { maxOutputTokensMax: entry.maxOutputTokens }),
      ...(upstream ? { upstream } : {}),
      ...(endpoints ? { endpoints } : {}),
      ...(entry.fallbacks ? { fallbacks: entry.fallbacks } : {}),
    };
  });
}

function endpointsOf(
  slug: string,
  entry: z.infer<typeof modelEntrySchema>,
  environment: NodeJS.ProcessEnv,
): CatalogEndpoint[] {
  if (entry.baseUrl !== undefined || entry.apiKeyVariable !== undefined)
    throw new ModelsFileError(`models.${slug}: give either endpoints or baseUrl/apiKeyVariable, not both`);
  const names = new Set<string>();
  return entry.endpoints!.map((endpoint, index) => {
    if (names.has(endpoint.name))
      throw new ModelsFileError(`models.${slug}.endpoints.${index}.name ${endpoint.name} is given twice`);
    names.add(endpoint.name);
    const apiKeyVariable = endpoint.apiKeyVariable ?? `${entry.family.toUpperCase()}_API_KEY`;
    if (!environment[apiKeyVariable]?.trim())
      throw new ModelsFileError(
        `models.${slug}.endpoints.${index}: the environment variable ${apiKeyVariable} is not set`,
      );
    return {
      name: endpoint.name,
      baseUrl: endpoint.baseUrl,
      apiKeyVariable,
      weight: endpoint.weight,
      ...(endpoint.upstreamModelId === undefined ? {} : { upstreamModelId: endpoint.upstreamModelId }),
      ...(endpoint.concurrentRequestsMax === undefined
        ? {}
        : { concurrentRequestsMax: endpoint.concurrentRequestsMax }),
    };
  });
}

/**
 * Fallbacks name models that exist (built in or in the file), never the model itself; an endpoint name
 * means one upstream (URL and key) wherever it is used, so its breaker and capacity are that upstream's.
 */
function checkReferences(models: readonly CatalogModel[]): void {
  const slugs = new Set(models.map((model) => model.slug));
  const endpoints = new Map<string, CatalogEndpoint>();
  for (const model of models) {
    for (const fallback of model.fallbacks ?? []) {
      if (fallback === model.slug)
        throw new ModelsFileError(`models.${model.slug}.fallbacks names the model itself`);
      if (!slugs.has(fallback) && !findBuiltInModel(fallback))
        throw new ModelsFileError(`models.${model.slug}.fallbacks names ${fallback}, which is no model`);
    }
    for (const endpoint of model.endpoints ?? []) {
      const seen = endpoints.get(endpoint.name);
      if (
        seen &&
        (seen.baseUrl !== endpoint.baseUrl ||
          seen.apiKeyVariable !== endpoint.apiKeyVariable ||
          seen.concurrentRequestsMax !== endpoint.concurrentRequestsMax)
      )
        throw new ModelsFileError(
          `models.${model.slug}: endpoint ${endpoint.name} differs from another of that name (baseUrl, apiKeyVariable or concurrentRequestsMax)`,
        );
      endpoints.set(endpoint.name, endpoint);
    }
  }
}

/** A model of its own upstream needs both where it is and its key; neither: the family's upstream. */
function upstreamOf(
  slug: string,
  entry: z.infer<typeof modelEntrySchema>,
  environment: NodeJS.ProcessEnv,
): CatalogModel["upstream"] {
  if (entry.baseUrl === undefined && entry.apiKeyVariable === undefined) return undefined;
  const familyPrefix = entry.family.toUpperCase();
  const baseUrl = entry.baseUrl ?? environment[`${familyPrefix}_BASE_URL`];
  const apiKeyVariable = entry.apiKeyVariable ?? `${familyPrefix}_API_KEY`;
  if (!baseUrl)
    throw new ModelsFileError(
      `models.${slug}: apiKeyVariable without baseUrl needs ${familyPrefix}_BASE_URL`,
    );
  if (!environment[apiKeyVariable]?.trim())
    throw new ModelsFileError(`models.${slug}: the environment variable ${apiKeyVariable} is not set`);
  return { baseUrl, apiKeyVariable };
}

/** Reads, parses and checks a models file; every problem is one line naming the file and the field. */
export async function loadModelsFile(path: string, environment: NodeJS.ProcessEnv): Promise<CatalogModel[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new ModelsFileError(
      `MODELS_FILE ${path} cannot be read (${(error as NodeJS.ErrnoException).code})`,
    );
  }
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new ModelsFileError(
      `MODELS_FILE ${path} is not YAML or JSON: ${(error as Error).message.split("\n")[0]}`,
    );
  }
  const parsed = modelsFileSchema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ModelsFileError(`MODELS_FILE ${path}: ${issue.path.join(".") || "document"} ${issue.message}`);
  }
  try {
    const models = modelsOf(parsed.data, environment);
    checkReferences(models);
    return models;
  } catch (error) {
    if (error instanceof ModelsFileError) throw new ModelsFileError(`MODELS_FILE ${path}: ${error.message}`);
    throw error;
  }
}
