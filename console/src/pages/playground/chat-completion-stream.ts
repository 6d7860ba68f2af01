import { type NewApiKey, userApi } from "../../lib/api";
import { takeSseData } from "../../lib/sse";

export type PlaygroundKey = NewApiKey & { baseUrl: string };
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
}
export type ChatMessage = { role: "system" | "user" | "assistant"; content: string };

/** What the page reads of a streamed chunk: the text's next piece and, in the last chunk, the usage. */
interface ChatCompletionChunk {
  choices?: { delta?: { content?: string } }[];
  usage?: ChatUsage;
}

/** The chunks of a server-sent event stream, `[DONE]` left out. */
async function* chunksOf(body: NonNullable<Response["body"]>): AsyncGenerator<ChatCompletionChunk> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const { payloads, rest } = takeSseData(buffer + value);
    buffer = rest;
    for (const payload of payloads)
      if (payload !== "[DONE]") yield JSON.parse(payload) as ChatCompletionChunk;
  }
}

/**
 * POSTs a streamed chat completion with the playground key, as a client's code would, and hands over the
 * reply as it comes. The request id is handed over first, even when the gateway refuses (its message is
 * thrown then); it is returned for looking up the charge.
 */
export async function streamChatCompletion(
  request: { key: PlaygroundKey; body: object; signal: AbortSignal },
  on: { requestId(id: string | undefined): void; delta(text: string): void; usage(usage: ChatUsage): void },
): Promise<string | undefined> {
  const response = await fetch(`${request.key.baseUrl}/chat/completions`, {
    method: "POST",
    signal: request.signal,
    headers: { authorization: `Bearer ${request.key.key}`, "content-type": "application/json" },
    body: JSON.stringify(request.body),
  });
  const requestId = response.headers.get("x-request-id") ?? undefined;
  on.requestId(requestId);
  if (!response.ok || !response.body) {
    const body = (await response.json().catch(() => ({}))) as { message?: string };
    throw new Error(body.message ?? `HTTP ${response.status}`);
  }
  for await (const chunk of chunksOf(response.body)) {
    const delta = chunk.choices?.[0]?.delta?.content;
    if (delta) on.delta(delta);
    if (chunk.usage) on.usage(chunk.usage);
  }
  return requestId;
}

const costPollIntervalMs = 500;
const costPollAttemptsMax = 60;

/** The request's cost once the activity log shows it charged; null if it is not within the attempts. */
export async function chargedCostOf(requestId: string, isOrganization: boolean): Promise<string | null> {
  for (let attempt = 0; attempt < costPollAttemptsMax; attempt += 1) {
    const page = await userApi.activity({ requestId }, isOrganization, { limit: 1 });
    const costWon = page.data[0]?.costWon ?? null;
    if (costWon !== null) return costWon;
    await new Promise((resolve) => setTimeout(resolve, costPollIntervalMs));
  }
  return null;
}
