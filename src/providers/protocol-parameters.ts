import type { GenerationParameter, UpstreamProtocol } from "./provider";

/**
 * The optional parameters each upstream protocol's adapter translates into its own words. A client that
 * sends any other for a model of that protocol gets 400/100 naming the field (C12): nothing is dropped
 * silently. A parameter joins a protocol's set in the same change that teaches its adapter to send it.
 */
export const protocolParameters: Readonly<Record<UpstreamProtocol, ReadonlySet<GenerationParameter>>> = {
  "chat-completions": new Set<GenerationParameter>([]),
  responses: new Set<GenerationParameter>([
    "reasoningEffort",
    "user",
    "metadata",
    "tools",
    "toolChoice",
    "parallelToolCalls",
    "outputFormat",
    "images",
  ]),
  messages: new Set<GenerationParameter>([]),
  "generate-content": new Set<GenerationParameter>([]),
};
