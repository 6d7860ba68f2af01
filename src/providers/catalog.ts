import { canonicalMoney } from "../kernel/money";
import type { ModelFamily, SamplingParameter, UpstreamProtocol } from "./provider";

/**
 * Every model slug the gateway serves (interface.md, "Supported model slugs"). The union makes the catalog
 * below exhaustive: a missing, extra or misspelt slug fails type-check.
 */
export type ModelSlug =
  | "alpha-5.4-mini"
  | "alpha-5.4"
  | "alpha-5.4-pro"
  | "alpha-5.5"
  | "beta-3-flash"
  | "beta-3.1-flash-lite"
  | "beta-3.1-pro"
  | "beta-3.5-flash"
  | "gamma-4-3"
  | "gamma-4-5"
  | "delta-4.5-haiku"
  | "delta-4.6-sonnet"
  | "delta-4.6-opus"
  | "delta-4.7-opus"
  | "delta-4.8-opus"
  | "delta-5-sonnet"
  | "epsilon"
  | "epsilon-pro"
  | "epsilon-reasoning-pro"
  | "epsilon-deep-research"
  | "zeta-pro3"
  | "zeta-pro2"
  | "zeta-mini";

/** A decimal string such as "1.25": money crosses module boundaries as text, never as a JS number. */
export type UsdPerMillionTokens = `${number}`;

export interface CatalogModel {
  /** A built-in `ModelSlug`, or any slug a models file (MODELS_FILE) adds. */
  readonly slug: string;
  readonly family: ModelFamily;
  readonly protocol: UpstreamProtocol;
  readonly upstreamModelId: string;
  /** Default prices; the admin API (C6) overrides them through the ledger. */
  readonly inputUsdPerMillionTokens: UsdPerMillionTokens;
  readonly outputUsdPerMillionTokens: UsdPerMillionTokens;
  readonly cachedInputUsdPerMillionTokens: UsdPerMillionTokens;
  /** Validated like any other parameter, then not sent upstream (C5). */
  readonly ignoredParameters: readonly SamplingParameter[];
  /** Unix seconds, shown as `created` by GET /models. */
  readonly created: number;
  /** Largest output a request may ask for (max_tokens, max_output_tokens); absent: the upstream's own. */
  readonly maxOutputTokensMax?: number;
  /**
   * Where this model's upstream is when it is not its family's (`<FAMILY>_BASE_URL` / `_API_KEY`): set
   * by a models file. The key is named by its environment variable, never held in the catalog.
   */
  readonly upstream?: { readonly baseUrl: string; readonly apiKeyVariable: string };
  /**
   * Several upstream endpoints of this model's protocol (models file `endpoints`), in place of `upstream`
   * or the family's: requests are spread over them and retried across them (docs/upstream-resilience.md).
   */
  readonly endpoints?: readonly CatalogEndpoint[];
  /** Models tried, in order, when this one's endpoints all fail before output (models file `fallbacks`). */
  readonly fallbacks?: readonly string[];
}

/** One upstream endpoint of a model; its key is named by its environment variable, never held here. */
export interface CatalogEndpoint {
  /** Shown in metrics, events and the admin view in place of the URL. */
  readonly name: string;
  readonly baseUrl: string;
  readonly apiKeyVariable: string;
  /** The id this endpoint knows the model by (e.g. a deployment name); default: the model's. */
  readonly upstreamModelId?: string;
  /** Its share of the model's requests, relative to the other endpoints' weights. */
  readonly weight: number;
  /** Requests at once at most through this endpoint; absent: bounded by the connection pool only. */
  readonly concurrentRequestsMax?: number;
}

/** Upstream ids are neutral too: each equals its public slug, so the entry does not repeat it. */
type CatalogEntry = Omit<CatalogModel, "slug" | "upstreamModelId">;

/** One fixed instant (2026-01-01T00:00:00Z) so that GET /models is stable across restarts. */
const catalogCreatedUnixSeconds = 1_767_225_600;

const noIgnoredParameters: readonly SamplingParameter[] = [];
const ignoresTemperature: readonly SamplingParameter[] = ["temperature"];
const ignoresTemperatureAndTopP: readonly SamplingParameter[] = ["temperature", "top_p"];

/**
 * Prices are plausible defaults in USD per 1M tokens. Where an upstream gives no cache discount the cached
 * price equals the input price, so we never bill a cached token below what the upstream charges us for it.
 */
const catalogEntries = {
  "alpha-5.4-mini": entry("alpha", "chat-completions", "0.25", "2.00", "0.025"),
  "alpha-5.4": entry("alpha", "chat-completions", "1.25", "10.00", "0.125"),
  // Upstream offers this model only in the responses format (C5).
  "alpha-5.4-pro": entry("alpha", "responses", "15.00", "120.00", "15.00", ignoresTemperatureAndTopP),
  "alpha-5.5": entry("alpha", "chat-completions", "2.50", "15.00", "0.25", ignoresTemperatureAndTopP),
  "beta-3-flash": entry("beta", "generate-content", "0.30", "2.50", "0.03"),
  "beta-3.1-flash-lite": entry("beta", "generate-content", "0.10", "0.40", "0.01"),
  "beta-3.1-pro": entry("beta", "generate-content", "2.00", "12.00", "0.20"),
  "beta-3.5-flash": entry("beta", "generate-content", "0.50", "3.00", "0.05"),
  "gamma-4-3": entry("gamma", "chat-completions", "3.00", "15.00", "0.75"),
  "gamma-4-5": entry("gamma", "chat-completions", "0.20", "0.50", "0.05"),
  "delta-4.5-haiku": entry("delta", "messages", "1.00", "5.00", "0.10"),
  "delta-4.6-sonnet": entry("delta", "messages", "3.00", "15.00", "0.30"),
  "delta-4.6-opus": entry("delta", "messages", "5.00", "25.00", "0.50"),
  "delta-4.7-opus": entry("delta", "messages", "5.00", "25.00", "0.50", ignoresTemperature),
  "delta-4.8-opus": entry("delta", "messages", "5.00", "25.00", "0.50", ignoresTemperature),
  "delta-5-sonnet": entry("delta", "messages", "3.00", "15.00", "0.30"),
  epsilon: entry("epsilon", "chat-completions", "1.00", "1.00", "1.00"),
  "epsilon-pro": entry("epsilon", "chat-completions", "3.00", "15.00", "3.00"),
  "epsilon-reasoning-pro": entry("epsilon", "chat-completions", "2.00", "8.00", "2.00"),
  "epsilon-deep-research": entry("epsilon", "chat-completions", "2.00", "8.00", "2.00"),
  "zeta-pro3": entry("zeta", "chat-completions", "0.50", "1.50", "0.125"),
  "zeta-pro2": entry("zeta", "chat-completions", "0.25", "0.25", "0.0625"),
  "zeta-mini": entry("zeta", "chat-completions", "0.15", "0.15", "0.0375"),
} satisfies Record<ModelSlug, CatalogEntry>;

function entry(
  family: ModelFamily,
  protocol: UpstreamProtocol,
  inputUsdPerMillionTokens: UsdPerMillionTokens,
  outputUsdPerMillionTokens: UsdPerMillionTokens,
  cachedInputUsdPerMillionTokens: UsdPerMillionTokens,
  ignoredParameters: readonly SamplingParameter[] = noIgnoredParameters,
): CatalogEntry {
  // Written as prices are read ("0.50"), kept as money crosses the API ("0.5": docs/api.md, "Money").
  const canonical = (price: UsdPerMillionTokens) => canonicalMoney(price) as UsdPerMillionTokens;
  return {
    family,
    protocol,
    inputUsdPerMillionTokens: canonical(inputUsdPerMillionTokens),
    outputUsdPerMillionTokens: canonical(outputUsdPerMillionTokens),
    cachedInputUsdPerMillionTokens: canonical(cachedInputUsdPerMillionTokens),
    ignoredParameters,
    created: catalogCreatedUnixSeconds,
  };
}

const builtInModels: readonly CatalogModel[] = Object.freeze(
  (Object.entries(catalogEntries) as [ModelSlug, CatalogEntry][]).map(([slug, fields]) =>
    Object.freeze({ ...fields, slug, upstreamModelId: slug }),
  ),
);

let catalogModels: readonly CatalogModel[] = builtInModels;
let catalogModelsBySlug: ReadonlyMap<string, CatalogModel> = new Map(
  catalogModels.map((model) => [model.slug, model]),
);

/**
 * Adds the models of a models file to the built-in catalog, once at start before anything serves: an
 * entry with a built-in slug replaces that model, any other slug is added after the built-in ones.
 */
export function installModels(models: readonly CatalogModel[]): void {
  const replaced = new Map(models.map((model) => [model.slug, Object.freeze({ ...model })]));
  catalogModels = Object.freeze([
    ...builtInModels.map((model) => replaced.get(model.slug) ?? model),
    ...[...replaced.values()].filter(
      (model) => !builtInModels.some((builtIn) => builtIn.slug === model.slug),
    ),
  ]);
  catalogModelsBySlug = new Map(catalogModels.map((model) => [model.slug, model]));
}

/** The built-in entry of a slug (what a models file overrides), or undefined. */
export function findBuiltInModel(slug: string): CatalogModel | undefined {
  return builtInModels.find((model) => model.slug === slug);
}

export function isModelSlug(text: string): text is ModelSlug {
  return builtInModels.some((model) => model.slug === text);
}

/** The catalog entry of a public slug, or undefined for an unknown slug (the edge answers 404/120). */
export function findModel(slug: string): CatalogModel | undefined {
  return catalogModelsBySlug.get(slug);
}

/** Every model: the built-in ones in the order of interface.md, then those a models file added. */
export function listModels(): readonly CatalogModel[] {
  return catalogModels;
}
