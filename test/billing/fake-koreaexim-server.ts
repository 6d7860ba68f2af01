import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { businessDayRows, type KoreaeximRow, refusalRows } from "./koreaexim-rows";

/**
 * A stand-in for Korea Eximbank's exchange endpoint speaking its real protocol: GET with `authkey`,
 * `searchdate=YYYYMMDD` and `data=AP01`; a JSON array of rows. Like the bank, it answers result 3 to a
 * wrong authkey, result 2 to a wrong data code, and an empty array for any date nobody scripted (a
 * weekend, a holiday, or a day not yet published).
 */
export type FakeBankAnswer =
  | { kind: "business-day"; usdDealBaseRate: string }
  | { kind: "rows"; rows: readonly KoreaeximRow[] }
  | { kind: "no-rate-published" }
  | { kind: "refusal"; resultCode: number }
  | { kind: "http-status"; status: number; location?: string }
  | { kind: "raw-body"; body: string }
  | { kind: "hang" };

export interface FakeBankRequest {
  searchDate: string | null;
  authkey: string | null;
  dataCode: string | null;
}

export interface FakeKoreaeximServer {
  /** The endpoint URL, to pass as KOREAEXIM_URL. */
  url: string;
  /** Answers for one `searchdate` (YYYYMMDD), one per request in order; the last one then repeats. */
  script(searchDate: string, ...answers: FakeBankAnswer[]): void;
  requests(): readonly FakeBankRequest[];
  close(): Promise<void>;
}

const endpointPath = "/site/program/financial/exchangeJSON";
const exchangeRateDataCode = "AP01";

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json;charset=UTF-8" });
  response.end(JSON.stringify(body));
}

function answerWith(response: ServerResponse, answer: FakeBankAnswer): void {
  switch (answer.kind) {
    case "business-day":
      sendJson(response, 200, businessDayRows(answer.usdDealBaseRate));
      return;
    case "rows":
      sendJson(response, 200, answer.rows);
      return;
    case "no-rate-published":
      sendJson(response, 200, []);
      return;
    case "refusal":
      sendJson(response, 200, refusalRows(answer.resultCode));
      return;
    case "http-status":
      response.writeHead(answer.status, {
        "content-type": "text/html;charset=UTF-8",
        ...(answer.location === undefined ? {} : { location: answer.location }),
      });
      response.end(`<html><body>${answer.status}</body></html>`);
      return;
    case "raw-body":
      response.writeHead(200, { "content-type": "text/html;charset=UTF-8" });
      response.end(answer.body);
      return;
    case "hang":
      return;
    default: {
      const unreachable: never = answer;
      throw new Error(`unhandled fake answer: ${JSON.stringify(unreachable)}`);
    }
  }
}

export async function startFakeKoreaeximServer(options: { authkey: string }): Promise<FakeKoreaeximServer> {
  const scripts = new Map<string, FakeBankAnswer[]>();
  const requests: FakeBankRequest[] = [];
  const sockets = new Set<Socket>();

  function nextAnswer(searchDate: string): FakeBankAnswer {
    const queue = scripts.get(searchDate);
    if (queue === undefined || queue.length === 0) return { kind: "no-rate-published" };
    return queue.length > 1 ? (queue.shift() as FakeBankAnswer) : (queue[0] as FakeBankAnswer);
  }

  function handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? "/", "http://fake-bank");
    const searchDate = url.searchParams.get("searchdate");
    const authkey = url.searchParams.get("authkey");
    const dataCode = url.searchParams.get("data");
    requests.push({ searchDate, authkey, dataCode });
    if (request.method !== "GET" || url.pathname !== endpointPath) {
      sendJson(response, 404, []);
      return;
    }
    if (authkey !== options.authkey) {
      answerWith(response, { kind: "refusal", resultCode: 3 });
      return;
    }
    if (dataCode !== exchangeRateDataCode) {
      answerWith(response, { kind: "refusal", resultCode: 2 });
      return;
    }
    if (searchDate === null || !/^\d{8}$/.test(searchDate)) {
      // The bank would answer "today"; a client of ours always names the date, so this is a test failure.
      sendJson(response, 400, []);
      return;
    }
    answerWith(response, nextAnswer(searchDate));
  }

  const server = createServer(handle);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${endpointPath}`,
    script(searchDate, ...answers) {
      if (!/^\d{8}$/.test(searchDate)) throw new Error(`searchdate must be YYYYMMDD: ${searchDate}`);
      if (answers.length === 0) throw new Error("script at least one answer");
      scripts.set(searchDate, [...answers]);
    },
    requests: () => [...requests],
    async close() {
      // Hanging requests hold their sockets open; end them so close() resolves.
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
