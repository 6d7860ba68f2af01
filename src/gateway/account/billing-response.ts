import type { Response } from "express";
import type { BillingHistoryEntry } from "../../billing/read-models/billing-history";
import { endedAsHead } from "../http/head-request";

/**
 * Billing history as JSON, streamed page by page: an export may hold up to a million charges, which must
 * not be held in memory at once. The body is `{ ...preamble, "data": [ entry, … ] }`.
 */
export async function sendBillingJson(
  response: Response,
  preamble: Record<string, unknown>,
  pages: AsyncIterable<BillingHistoryEntry[]>,
): Promise<void> {
  response.status(200).type("application/json");
  if (endedAsHead(response)) return;
  const opening = JSON.stringify({ ...preamble, data: [] });
  await write(response, `${opening.slice(0, -"[]}".length)}[`);
  let first = true;
  for await (const page of pages) {
    const rows = page.map((entry) => JSON.stringify(entry)).join(",");
    await write(response, first ? rows : `,${rows}`);
    first = false;
  }
  response.end("]}");
}

/**
 * Writes with backpressure: waits for the socket to drain rather than buffering the whole export. A client
 * that left while the next page was read has had its one `close` already, and no `drain` follows: the write
 * fails at once then, so the route ends (its error handler stays silent for a response already gone).
 */
export function write(response: Response, chunk: string): Promise<void> {
  if (chunk === "") return Promise.resolve();
  if (response.destroyed) return Promise.reject(clientWentAway());
  if (response.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      response.off("close", onClose);
      resolve();
    };
    const onClose = () => {
      response.off("drain", onDrain);
      reject(clientWentAway());
    };
    response.once("drain", onDrain);
    response.once("close", onClose);
  });
}

function clientWentAway(): Error {
  return new Error("client went away during the export");
}
