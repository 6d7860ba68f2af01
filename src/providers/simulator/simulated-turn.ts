import { createHash } from "node:crypto";
import {
  countPromptTokens,
  countTokens,
  mulberry32,
  type SimulatedCompletion,
  type SimulatedMessage,
  simulateCompletion,
} from "./simulated-completion";

/**
 * What a simulated model does with tools, structured output and images, the same for every protocol: each
 * protocol parses its own fields into a `SimulatedTurnInput` and renders the `SimulatedTurn` in its own shape.
 *
 * The behaviour is the simplest a real model shows and a client's tool loop needs:
 * - tools offered, choice `auto`, the conversation's last turn the user's: the model calls the tools
 *   (every offered tool, at most two, when parallel calls are allowed; else the first), then stops;
 * - choice `required` or a named function: it calls (that function) whatever the last turn was;
 * - after a tool result, under `auto`: it answers in text, which is how a tool loop ends;
 * - structured output: the text is a JSON instance of the schema (`json_schema`), or a JSON object;
 * - images cost `simulatedTokensPerImage` prompt tokens each, reported as the upstream's own count.
 */

export interface SimulatedTool {
  name: string;
  /** The JSON Schema of the arguments, as the request sent it. */
  parameters?: unknown;
}

export type SimulatedToolChoice = "auto" | "none" | "required" | { name: string };

export type SimulatedOutputFormat = { type: "json_object" } | { type: "json_schema"; schema: unknown };

export interface SimulatedTurnInput {
  /** Roles as the protocol names them; a tool result is role "tool" whatever the protocol calls it. */
  messages: readonly SimulatedMessage[];
  maxOutputTokens: number | undefined;
  tools: readonly SimulatedTool[];
  toolChoice: SimulatedToolChoice;
  parallelToolCalls: boolean;
  outputFormat: SimulatedOutputFormat | undefined;
  imageCount: number;
}

export interface SimulatedToolCall {
  /** Unique per call: `call_<hash>`; a protocol with its own id style may derive from it. */
  readonly id: string;
  readonly name: string;
  /** The whole arguments JSON text, and the pieces a stream sends it in (they join to it). */
  readonly arguments: string;
  readonly argumentPieces: readonly string[];
  readonly tokens: number;
}

/** A completion, plus the calls made instead of (or before) text. Finish is "tool_calls" when there are any. */
export interface SimulatedTurn extends Omit<SimulatedCompletion, "finish"> {
  readonly toolCalls: readonly SimulatedToolCall[];
  readonly finish: "stop" | "length" | "tool_calls";
  /** The text is the model declining (the simulator's `refuse`), for protocols that say so apart. */
  readonly refused?: boolean;
}

/** What the simulated upstream bills per image: a flat count, like a low-detail image upstream. */
export const simulatedTokensPerImage = 85;
const parallelCallsMax = 2;
/** Arguments and JSON text stream in pieces of this many characters. */
const pieceCharacters = 8;

export function simulateTurn(input: SimulatedTurnInput): SimulatedTurn {
  const promptTokens =
    countPromptTokens(input.messages) +
    (input.tools.length > 0 ? countTokens(JSON.stringify(input.tools)) : 0) +
    input.imageCount * simulatedTokensPerImage;
  const calledTools = toolsToCall(input);
  if (calledTools.length > 0) {
    const toolCalls = calledTools.map((tool, index) => toolCallOf(tool, index, input.messages));
    const outputTokens = toolCalls.reduce((total, call) => total + call.tokens, 0);
    return Object.freeze({
      pieces: [],
      pieceTokens: [],
      text: "",
      promptTokens,
      outputTokens,
      toolCalls,
      finish: "tool_calls",
    });
  }
  if (input.outputFormat) return jsonTurn(input.outputFormat, promptTokens, input.maxOutputTokens);
  const completion = simulateCompletion(input.messages, input.maxOutputTokens);
  return Object.freeze({ ...completion, promptTokens, toolCalls: [] });
}

function toolsToCall(input: SimulatedTurnInput): readonly SimulatedTool[] {
  const { tools, toolChoice } = input;
  if (tools.length === 0 || toolChoice === "none") return [];
  if (typeof toolChoice === "object") {
    const named = tools.find((tool) => tool.name === toolChoice.name);
    return named ? [named] : [];
  }
  const lastRole = input.messages.at(-1)?.role;
  if (toolChoice === "auto" && lastRole !== "user") return [];
  return tools.slice(0, input.parallelToolCalls ? parallelCallsMax : 1);
}

function toolCallOf(tool: SimulatedTool, index: number, messages: readonly SimulatedMessage[]) {
  const argumentsText = JSON.stringify(instanceOf(tool.parameters, mulberry32(index + 1)));
  const digest = createHash("sha256");
  for (const message of messages) digest.update(message.role).update("\u0000").update(message.text);
  digest.update(`\u0001${tool.name}\u0001${index}`);
  return Object.freeze({
    id: `call_${digest.digest("hex").slice(0, 24)}`,
    name: tool.name,
    arguments: argumentsText,
    argumentPieces: piecesOf(argumentsText),
    tokens: countTokens(tool.name) + countTokens(argumentsText),
  });
}

function jsonTurn(
  format: SimulatedOutputFormat,
  promptTokens: number,
  maxOutputTokens: number | undefined,
): SimulatedTurn {
  const value =
    format.type === "json_schema" ? instanceOf(format.schema, mulberry32(7)) : { answer: "A quiet harbor." };
  const text = JSON.stringify(value);
  const pieces = piecesOf(text);
  const pieceTokens = pieces.map((piece) => countTokens(piece));
  let kept = pieces.length;
  let outputTokens = 0;
  for (let index = 0; index < pieces.length; index += 1) {
    if (maxOutputTokens !== undefined && outputTokens + pieceTokens[index]! > maxOutputTokens) {
      kept = index;
      break;
    }
    outputTokens += pieceTokens[index]!;
  }
  return Object.freeze({
    pieces: pieces.slice(0, kept),
    pieceTokens: pieceTokens.slice(0, kept),
    text: pieces.slice(0, kept).join(""),
    promptTokens,
    outputTokens,
    toolCalls: [],
    finish: kept < pieces.length ? "length" : "stop",
  });
}

function piecesOf(text: string): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += pieceCharacters)
    pieces.push(text.slice(start, start + pieceCharacters));
  return pieces;
}

const words = ["harbor", "meadow", "lantern", "river", "copper", "garden"];

/**
 * A deterministic value valid against the common subset of JSON Schema that tool and output schemas use:
 * objects (every property, so `required` is met), arrays (one item), enums and consts (the first value),
 * strings, numbers, integers, booleans, null, and anyOf / oneOf (the first branch).
 */
export function instanceOf(schema: unknown, random: () => number, depth = 0): unknown {
  if (typeof schema !== "object" || schema === null || depth > 8) return {};
  const node = schema as Record<string, unknown>;
  if ("const" in node) return node.const;
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0];
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = node[key];
    if (Array.isArray(branches) && branches.length > 0) return instanceOf(branches[0], random, depth + 1);
  }
  const type = Array.isArray(node.type) ? node.type.find((each) => each !== "null") : node.type;
  switch (type) {
    case "object": {
      const properties = (node.properties ?? {}) as Record<string, unknown>;
      return Object.fromEntries(
        Object.entries(properties).map(([name, property]) => [name, instanceOf(property, random, depth + 1)]),
      );
    }
    case "array":
      return [instanceOf(node.items, random, depth + 1)];
    case "string":
      return words[random() % words.length];
    case "integer":
      return 1 + (random() % 9);
    case "number":
      return (1 + (random() % 90)) / 10;
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return node.properties ? instanceOf({ ...node, type: "object" }, random, depth + 1) : {};
  }
}
