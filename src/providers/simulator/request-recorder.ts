import type { IncomingMessage, ServerResponse } from "node:http";
import type { RecordedRequest, RequestEnding } from "./simulator-types";

/** Enough history for any test; bounded so that a benchmark run does not grow memory. */
export const recordedRequestsMax = 64;

/** Keeps the last requests the simulator received, so tests can assert what the upstream was sent. */
export class RequestRecorder {
  private requests: RecordedRequest[] = [];
  /** Every request received, not only those kept: a count taken before and after says how many came. */
  private received = 0;

  record(request: IncomingMessage, response: ServerResponse, body: unknown): RecordedRequest {
    const ended = new Promise<RequestEnding>((resolve) => {
      response.once("close", () => resolve(response.writableFinished ? "completed" : "connection-closed"));
    });
    const recorded: RecordedRequest = {
      method: request.method ?? "",
      path: request.url ?? "",
      headers: { ...request.headers },
      body,
      ended,
    };
    this.received += 1;
    this.requests.push(recorded);
    if (this.requests.length > recordedRequestsMax) this.requests.shift();
    return recorded;
  }

  all(): readonly RecordedRequest[] {
    return [...this.requests];
  }

  get receivedCount(): number {
    return this.received;
  }

  last(): RecordedRequest | undefined {
    return this.requests.at(-1);
  }

  clear(): void {
    this.requests = [];
  }
}
