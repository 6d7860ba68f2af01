import { createHash } from "node:crypto";
import { countTokens as countAnyTokens } from "gpt-tokenizer";
import { boundedTokenCounter } from "../bounded-token-count";
import { BoundedCache } from "./bounded-cache";

/** A client's prompt may be one 1 MB word: counted at a cost bounded by its length. */
export const countTokens = boundedTokenCounter(countAnyTokens);

export interface SimulatedMessage {
  role: string;
  text: string;
}

export type SimulatedFinish = "stop" | "length";

/** One deterministic answer: the deltas a stream sends, and the real token counts of prompt and output. */
export interface SimulatedCompletion {
  readonly pieces: readonly string[];
  /** Tokens of each piece; they sum to `outputTokens` and set the pace of a stream. */
  readonly pieceTokens: readonly number[];
  readonly text: string;
  readonly promptTokens: number;
  readonly outputTokens: number;
  readonly finish: SimulatedFinish;
}

/** Bounds of the answer length when the request sets no lower limit. */
export const simulatedWordsMin = 12;
export const simulatedWordsMax = 48;
const sentenceWordsMin = 5;
const sentenceWordsMax = 12;

/**
 * The chat template adds tokens around every message and primes the reply; these are the counts the
 * chat-completions tokenizer cookbook gives (3 per message, 3 for the reply).
 */
const templateTokensPerMessage = 3;
const replyPrimingTokens = 3;

/** Lowercase words only, so that each piece is exactly one word for the tokenizer (see tokensOfPiece). */
const vocabulary: readonly string[] = (
  "river signal garden window silver engine market harbor lantern meadow copper thunder pencil " +
  "orchard canyon velvet compass ladder marble feather harvest island journey kettle library " +
  "mountain needle ocean planet quarry ribbon saddle timber umbrella valley wagon yellow zephyr " +
  "anchor bridge candle desert ember forest glacier hollow ivory jungle kingdom lemon mirror " +
  "nectar oyster puzzle quiet rocket shadow tunnel violet winter the of and a"
).split(" ");

/** Cached per distinct prompt and limit, so repeated prompts (a benchmark) cost one hash and one lookup. */
const completionCache = new BoundedCache<string, SimulatedCompletion>(4096);
/** Pieces come from a finite set (word × capitalised × period), so their token counts are cached for good. */
const pieceTokenCounts = new Map<string, number>();

/**
 * The answer to a prompt: words drawn from a generator seeded by a hash of the messages, cut to
 * `maxOutputTokens` (finish "length") when that is lower than the drawn length.
 */
export function simulateCompletion(
  messages: readonly SimulatedMessage[],
  maxOutputTokens: number | undefined,
): SimulatedCompletion {
  const digest = promptDigest(messages);
  const cacheKey = `${digest.toString("base64")}|${maxOutputTokens ?? ""}`;
  const cached = completionCache.get(cacheKey);
  if (cached) return cached;
  const completion = buildCompletion(digest.readUInt32LE(0), countPromptTokens(messages), maxOutputTokens);
  completionCache.set(cacheKey, completion);
  return completion;
}

function promptDigest(messages: readonly SimulatedMessage[]): Buffer {
  const hash = createHash("sha256");
  for (const message of messages)
    hash.update(message.role).update("\u0000").update(message.text).update("\u0001");
  return hash.digest();
}

export function countPromptTokens(messages: readonly SimulatedMessage[]): number {
  let tokens = replyPrimingTokens;
  for (const message of messages) tokens += templateTokensPerMessage + countTokens(message.text);
  return tokens;
}

function buildCompletion(
  seed: number,
  promptTokens: number,
  maxOutputTokens: number | undefined,
): SimulatedCompletion {
  const random = mulberry32(seed);
  const wordCount = simulatedWordsMin + (random() % (simulatedWordsMax - simulatedWordsMin + 1));
  const pieces: string[] = [];
  const pieceTokens: number[] = [];
  let outputTokens = 0;
  let finish: SimulatedFinish = "stop";
  let sentenceLeft = sentenceLength(random);
  for (let index = 0; index < wordCount; index += 1) {
    const startsSentence = index === 0 || sentenceLeft === 0;
    if (sentenceLeft === 0) sentenceLeft = sentenceLength(random);
    sentenceLeft -= 1;
    const endsSentence = sentenceLeft === 0 || index === wordCount - 1;
    const piece = wordPiece(
      vocabulary[random() % vocabulary.length]!,
      index === 0,
      startsSentence,
      endsSentence,
    );
    const tokens = tokensOfPiece(piece);
    if (maxOutputTokens !== undefined && outputTokens + tokens > maxOutputTokens) {
      finish = "length";
      break;
    }
    pieces.push(piece);
    pieceTokens.push(tokens);
    outputTokens += tokens;
  }
  return Object.freeze({ pieces, pieceTokens, text: pieces.join(""), promptTokens, outputTokens, finish });
}

function sentenceLength(random: () => number): number {
  return sentenceWordsMin + (random() % (sentenceWordsMax - sentenceWordsMin + 1));
}

function wordPiece(word: string, isFirst: boolean, startsSentence: boolean, endsSentence: boolean): string {
  const cased = startsSentence ? word[0]!.toUpperCase() + word.slice(1) : word;
  return `${isFirst ? "" : " "}${cased}${endsSentence ? "." : ""}`;
}

/**
 * The tokenizer splits text into words before merging, and every piece is a whole word with its leading
 * space, so the pieces' counts add up to the count of the whole text (checked by a test).
 */
function tokensOfPiece(piece: string): number {
  let tokens = pieceTokenCounts.get(piece);
  if (tokens === undefined) {
    tokens = countTokens(piece);
    pieceTokenCounts.set(piece, tokens);
  }
  return tokens;
}

/** A small, fast, seedable generator of 32-bit unsigned integers (public-domain mulberry32). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return (value ^ (value >>> 14)) >>> 0;
  };
}
