import type { UpstreamProtocol } from "../provider";
import { chatCompletionsSimulation } from "./protocols/chat-completions-simulation";
import { generateContentSimulation } from "./protocols/generate-content-simulation";
import { messagesSimulation } from "./protocols/messages-simulation";
import { responsesSimulation } from "./protocols/responses-simulation";
import type { SimulatedProtocol, SimulatorRoute } from "./simulated-protocol";

export const simulatedProtocols: Readonly<Record<UpstreamProtocol, SimulatedProtocol>> = {
  "chat-completions": chatCompletionsSimulation,
  responses: responsesSimulation,
  messages: messagesSimulation,
  "generate-content": generateContentSimulation,
};

const generateContentPath = /\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/**
 * The protocol of a request, by the end of its path, so that any base-URL prefix works (a client
 * configured with ".../v1" and one configured with the bare origin both reach the simulator).
 */
export function routeRequest(method: string | undefined, pathname: string): SimulatorRoute | undefined {
  if (method !== "POST") return undefined;
  if (pathname.endsWith("/chat/completions")) return { protocol: "chat-completions" };
  if (pathname.endsWith("/responses")) return { protocol: "responses" };
  if (pathname.endsWith("/v1/messages")) return { protocol: "messages" };
  const match = generateContentPath.exec(pathname);
  if (match) {
    return {
      protocol: "generate-content",
      pathModel: decodeURIComponent(match[1]!),
      pathStream: match[2] === "streamGenerateContent",
    };
  }
  return undefined;
}
