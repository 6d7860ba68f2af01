import type { GenerationParameter, UpstreamProtocol } from "./provider";

/**
 * The optional parameters each upstream protocol's adapter translates into its own words. A client that
 * sends any other for a model of that protocol gets 400/100 naming the field (C12): nothing is dropped
 * silently. A parameter joins a protocol's set in the same change that teaches its adapter to send it.
 */
export const protocolParameters: Readonly<Record<UpstreamProtocol, ReadonlySet<GenerationParameter>>> = {
  // Free-form metadata tags a stored completion in this protocol: without `store: true` (the gateway stores
  // none) the upstream refuses it, so it is refused here first, before any hold.
  "chat-completions": new Set<GenerationParameter>([
    "stop",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "reasoningEffort",
    "user",
    "tools",
    "toolChoice",
    "parallelToolCalls",
    "outputFormat",
    "images",
    "imageDetail",
    "participantNames",
  ]),
  // stop, seed, the penalties and participant names have no counterpart in this protocol.
  responses: new Set<GenerationParameter>([
    "reasoningEffort",
    "user",
    "metadata",
    "tools",
    "toolChoice",
    "parallelToolCalls",
    "outputFormat",
    "images",
    "imageDetail",
  ]),
  // seed, penalties, free-form metadata, an image's detail and participant names have no counterpart in this
  // protocol (its metadata is user_id).
  messages: new Set<GenerationParameter>([
    "stop",
    "reasoningEffort",
    "user",
    "tools",
    "toolChoice",
    "parallelToolCalls",
    "outputFormat",
    "images",
  ]),
  // user, metadata, a per-image detail and participant names have no counterpart in this protocol.
  "generate-content": new Set<GenerationParameter>([
    "stop",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "reasoningEffort",
    "tools",
    "toolChoice",
    "parallelToolCalls",
    "outputFormat",
    "images",
  ]),
};

/**
 * The highest temperature each protocol's upstream takes; the client formats take 0 to 2 (interface.md), so
 * a higher one than its model's protocol takes cannot be honoured and is refused, naming the range (C12).
 */
export const protocolTemperatureMaximum: Readonly<Record<UpstreamProtocol, number>> = {
  "chat-completions": 2,
  responses: 2,
  messages: 1,
  "generate-content": 2,
};
