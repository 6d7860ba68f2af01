import OpenAI from "openai";
import { fastModel, prompt } from "./gateway-deployment";
import { startChild } from "./processes/child-process";

/**
 * Portkey OSS (`@portkey-ai/gateway`, pinned in package.json), the peer gateway the benchmarks measure the
 * gateway beside: started as its users deploy it (bench/processes/portkey-process.ts), routed to an
 * OpenAI-compatible upstream the way its users route to one — provider `openai`, the upstream's base URL as
 * a custom host — and checked with the official OpenAI client before anything is measured.
 */

export interface RunningPortkey {
  url: string;
  /** Portkey's own process (not its launcher's): the CPU counted as Portkey's whole box. */
  pid: number;
  stop(): Promise<void>;
}

export async function startPortkey(): Promise<RunningPortkey> {
  const launcher = await startChild("bench/processes/portkey-process.ts", [], process.env, /^http:\/\//);
  const [url, pid] = launcher.line.trim().split(" ");
  return { url: url!, pid: Number(pid), stop: () => launcher.stop() };
}

/** Headers that send a chat completion through Portkey to `upstreamUrl` (which serves `/chat/completions`). */
export function portkeyHeaders(upstreamUrl: string): Record<string, string> {
  return {
    authorization: "Bearer bench",
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": upstreamUrl,
  };
}

/** The path Portkey serves chat completions on. */
export const portkeyChatPath = "/v1/chat/completions";

interface Answer {
  text: string;
  usage: { prompt_tokens: number; completion_tokens: number } | undefined;
}

/**
 * Fails unless a JSON and a streamed request through Portkey, made with the official OpenAI client, return
 * the text and usage the simulator returns to the same client called directly: a peer that answered
 * anything else would be measured doing less than the gateway does.
 */
export async function assertPortkeyProxies(portkeyUrl: string, upstreamUrl: string): Promise<void> {
  const direct = new OpenAI({ baseURL: upstreamUrl, apiKey: "bench" });
  const { authorization: _, ...routing } = portkeyHeaders(upstreamUrl);
  const throughPortkey = new OpenAI({
    baseURL: `${portkeyUrl}/v1`,
    apiKey: "bench",
    defaultHeaders: routing,
  });
  for (const stream of [false, true]) {
    const expected = await answerOf(direct, stream);
    const actual = await answerOf(throughPortkey, stream);
    const mode = stream ? "streamed" : "JSON";
    if (expected.text.length === 0 || actual.text !== expected.text)
      throw new Error(`Portkey's ${mode} text ${JSON.stringify(actual.text)} is not the simulator's`);
    if (
      actual.usage?.prompt_tokens !== expected.usage?.prompt_tokens ||
      actual.usage?.completion_tokens !== expected.usage?.completion_tokens
    )
      throw new Error(`Portkey's ${mode} usage ${JSON.stringify(actual.usage)} is not the simulator's`);
  }
}

async function answerOf(client: OpenAI, stream: boolean): Promise<Answer> {
  const messages = [{ role: "user" as const, content: prompt }];
  if (!stream) {
    const completion = await client.chat.completions.create({ model: fastModel, messages, max_tokens: 64 });
    return { text: completion.choices[0]?.message.content ?? "", usage: completion.usage };
  }
  const chunks = await client.chat.completions.create({
    model: fastModel,
    messages,
    max_tokens: 64,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage: Answer["usage"];
  for await (const chunk of chunks) {
    text += chunk.choices[0]?.delta.content ?? "";
    usage = chunk.usage ?? usage;
  }
  return { text, usage };
}
