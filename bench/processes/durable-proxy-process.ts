import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { Pool } from "undici";

/**
 * The floor under the gateway's added latency: a bare proxy that forwards the body to the simulator and,
 * before answering, commits one row to PostgreSQL, as the gateway commits each usage. No auth, validation,
 * translation or queue. Under `/without-commit` it only forwards (reads the upstream's answer whole, then
 * answers); under `/pass-through` it only forwards and pipes the upstream's body as it arrives, so a stream
 * reaches the client chunk by chunk, as through the gateway. Prints its URL once listening.
 */
const withoutCommitPrefix = "/without-commit";
const passThroughPrefix = "/pass-through";
const upstreamUrl = process.env.UPSTREAM_URL!;
// As many upstream connections as the gateway allows itself, so a throughput baseline never queues for one.
const upstream = new Pool(upstreamUrl, { connections: 256 });
// Named, so the benchmark can find its backends and count their CPU.
const database = new pg.Pool({
  connectionString: process.env.DATABASE_URL!,
  max: 4,
  application_name: "bench-durable-proxy",
});
await database.query(
  "CREATE TABLE IF NOT EXISTS bench_durable_proxy (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, usage json NOT NULL)",
);

const server = createServer((request, response) => {
  forward(request, response).catch(() => {
    // The benchmark counts any non-200 answer as a failure and stops.
    if (!response.headersSent) response.writeHead(502);
    response.end();
  });
});

async function forward(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const reply = await upstream.request({
    path: "/chat/completions",
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer bench" },
    body: Buffer.concat(chunks),
  });
  if (request.url?.startsWith(passThroughPrefix)) {
    response.writeHead(reply.statusCode, {
      "content-type": String(reply.headers["content-type"] ?? "application/json"),
    });
    await pipeline(reply.body, response);
    return;
  }
  const text = await reply.body.text();
  if (!request.url?.startsWith(withoutCommitPrefix))
    await database.query({
      name: "record",
      text: "INSERT INTO bench_durable_proxy (usage) VALUES ($1)",
      values: ['{"input":12,"output":18}'],
    });
  response.writeHead(reply.statusCode, { "content-type": "application/json" });
  response.end(text);
}

server.listen(0, "127.0.0.1", () => {
  const address = server.address() as { port: number };
  process.stdout.write(`http://127.0.0.1:${address.port}\n`);
});
process.on("SIGTERM", () => {
  server.close();
  void Promise.all([upstream.close(), database.end()]).then(() => process.exit(0));
});
