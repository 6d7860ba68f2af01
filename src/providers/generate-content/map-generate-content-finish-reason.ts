import type { FinishReason } from "../provider";

type KnownGenerateContentFinishReason =
  | "STOP"
  | "MAX_TOKENS"
  | "SAFETY"
  | "RECITATION"
  | "BLOCKLIST"
  | "PROHIBITED_CONTENT"
  | "SPII"
  | "IMAGE_SAFETY"
  | "LANGUAGE"
  | "OTHER"
  | "MALFORMED_FUNCTION_CALL"
  | "UNEXPECTED_TOOL_CALL"
  | "FINISH_REASON_UNSPECIFIED";

const finishReasons: Readonly<Record<KnownGenerateContentFinishReason, FinishReason>> = {
  STOP: "stop",
  MAX_TOKENS: "length",
  SAFETY: "content_filter",
  RECITATION: "content_filter",
  BLOCKLIST: "content_filter",
  PROHIBITED_CONTENT: "content_filter",
  SPII: "content_filter",
  IMAGE_SAFETY: "content_filter",
  LANGUAGE: "other",
  OTHER: "other",
  MALFORMED_FUNCTION_CALL: "other",
  UNEXPECTED_TOOL_CALL: "other",
  FINISH_REASON_UNSPECIFIED: "other",
};

/** Upstreams add reasons over time; an unknown one is "other" rather than a malformed reply. */
export function mapGenerateContentFinishReason(finishReason: string): FinishReason {
  return Object.hasOwn(finishReasons, finishReason)
    ? finishReasons[finishReason as KnownGenerateContentFinishReason]
    : "other";
}
