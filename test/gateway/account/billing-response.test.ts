import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Response } from "express";
import { afterEach, describe, expect, it } from "vitest";
import { write } from "../../../src/gateway/account/billing-response";

/**
 * An export written page by page (the finance export, a statement's charge lines, the billing history) whose
 * client leaves between two pages — while the next page is read from the database, when no write waits for
 * the socket — must end there: its next write fails at once, so the route lets go of the request instead of
 * waiting forever for a `drain` or a `close` that has already happened.
 */

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** Serves one export whose first page is written, then hands the response over once its client has left. */
async function exportLeftAfterFirstPage(): Promise<Response> {
  const left = new Promise<Response>((resolve) => {
    const app = express();
    app.get("/export", async (_request, response) => {
      await write(response, "request_id,amount_won\r\n");
      response.once("close", () => resolve(response));
    });
    server = createServer(app).listen(0, "127.0.0.1");
  });
  await new Promise<void>((resolve) => server!.once("listening", () => resolve()));
  const client = new AbortController();
  const answer = await fetch(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/export`, {
    signal: client.signal,
  });
  await answer.body!.getReader().read();
  client.abort();
  return left;
}

describe("writing an export page", () => {
  it("given a client that left between two pages, when the next page is written, then the write fails at once", async () => {
    // Given
    const response = await exportLeftAfterFirstPage();

    // When
    const written = write(response, "req_1,0.00315\r\n");

    // Then
    const waitedMs = 2_000;
    const outcome = await Promise.race([
      written.then(
        () => "written",
        (error: unknown) => `refused: ${(error as Error).message}`,
      ),
      new Promise<string>((resolve) => setTimeout(() => resolve("still waiting"), waitedMs)),
    ]);
    expect(outcome).toBe("refused: client went away during the export");
  });
});
