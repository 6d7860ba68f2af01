import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A fake upstream endpoint for resilience tests: an HTTP server in front of the simulator (which speaks
 * every real protocol) that answers each request as `plan` decides — passed through, an error status in
 * the protocols' error body (optionally with `Retry-After`), a reset connection, or raw bytes that break
 * HTTP (written a moment apart, then the connection closed, or left open with `keepOpen`: a stream that
 * stalls). `down()` stops listening (connection refused), `up()` listens again on the same port.
 * `setBodyPlan` decides by the request's body instead (read whole first), e.g. to fail each distinct
 * request's first attempt and serve its retry, however concurrent requests interleave.
 */
export type UpstreamFault =
  | { kind: "pass" }
  | { kind: "status"; status: number; retryAfter?: string }
  | { kind: "reset" }
  | { kind: "raw"; writes: readonly string[]; keepOpen?: boolean };

export interface FaultyUpstream {
  /** The base URL to configure (the simulator's paths are appended to it). */
  url: string;
  /** What each request received, in order of arrival: the fault's kind, or its status. */
  readonly served: { fault: string; atMs: number; path: string; credential: string | undefined }[];
  setPlan(plan: (requestIndex: number) => UpstreamFault): void;
  /** Replaces the plan by one that reads each request's body; `setPlan` replaces it back. */
  setBodyPlan(plan: (body: string, requestIndex: number) => UpstreamFault): void;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultyUpstream(simulatorUrl: string): Promise<FaultyUpstream> {
  const target = new URL(simulatorUrl);
  let plan: (requestIndex: number) => UpstreamFault = () => ({ kind: "pass" });
  let bodyPlan: ((body: string, requestIndex: number) => UpstreamFault) | undefined;
  const served: FaultyUpstream["served"] = [];
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;

  const handle = (request: IncomingMessage, response: ServerResponse) => {
    if (!bodyPlan) {
      answer(request, response, plan(served.length), undefined);
      return;
    }
    const decide = bodyPlan;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      answer(request, response, decide(body.toString("utf8"), served.length), body);
    });
  };

  /** Answers as `fault` says; `body`: the request's body, already read (else it is piped on). */
  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    fault: UpstreamFault,
    body: Buffer | undefined,
  ) => {
    served.push({
      fault: fault.kind === "status" ? String(fault.status) : fault.kind,
      atMs: Date.now(),
      path: request.url ?? "",
      credential: credentialOf(request),
    });
    switch (fault.kind) {
      case "reset":
        request.socket.resetAndDestroy();
        return;
      case "raw":
        request.resume();
        void writeApart(request.socket, fault.writes, fault.keepOpen === true);
        return;
      case "status": {
        const body = JSON.stringify({
          error: { message: `fake upstream answered ${fault.status}`, type: "fake" },
        });
        response.writeHead(fault.status, {
          "content-type": "application/json",
          ...(fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }),
        });
        response.end(body);
        request.resume();
        return;
      }
      case "pass":
        forward(request, response, target, body);
        return;
      default: {
        const unreachable: never = fault;
        throw new Error(`unknown fault ${JSON.stringify(unreachable)}`);
      }
    }
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const listening = createServer(handle);
      listening.keepAliveTimeout = 30_000;
      listening.on("connection", (socket) => {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
      });
      listening.once("error", reject);
      listening.listen(port, "127.0.0.1", () => {
        port = (listening.address() as AddressInfo).port;
        server = listening;
        resolve();
      });
    });
  const stop = async () => {
    if (!server) return;
    const stopping = server;
    server = undefined;
    if (!stopping) return;
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => stopping.close(() => resolve()));
  };
  await listen();
  return {
    url: `http://127.0.0.1:${port}${target.pathname.replace(/\/+$/, "")}`,
    served,
    setPlan: (next) => {
      plan = next;
      bodyPlan = undefined;
    },
    setBodyPlan: (next) => {
      bodyPlan = next;
    },
    down: stop,
    up: async () => {
      if (!server) await listen();
    },
    close: stop,
  };
}

/** Each write its own read at the other end: the parts before a broken one arrive before it breaks. */
async function writeApart(socket: Socket, writes: readonly string[], keepOpen: boolean): Promise<void> {
  for (const [index, text] of writes.entries()) {
    if (index > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    if (socket.destroyed) return;
    socket.write(text);
  }
  if (!keepOpen) socket.end();
}

function credentialOf(request: IncomingMessage): string | undefined {
  const header =
    request.headers.authorization ?? request.headers["x-api-key"] ?? request.headers["x-goog-api-key"];
  return Array.isArray(header) ? header[0] : header;
}

/** Passes the request (its `body` when already read) to the simulator and its answer back. */
function forward(
  request: IncomingMessage,
  response: ServerResponse,
  target: URL,
  body: Buffer | undefined,
): void {
  const upstream = httpRequest(
    {
      host: target.hostname,
      port: target.port,
      method: request.method,
      path: `${target.pathname.replace(/\/+$/, "")}${request.url ?? ""}`,
      headers: request.headers,
    },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
      // The simulator cut its answer: cut ours the same way.
      answer.on("aborted", () => response.destroy());
    },
  );
  upstream.on("error", () => request.socket.destroy());
  // The gateway went away mid-answer: the simulator stops too, as a real upstream would.
  response.on("close", () => upstream.destroy());
  if (body) upstream.end(body);
  else request.pipe(upstream);
}
