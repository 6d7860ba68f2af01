import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type pg from "pg";
import { to as copyTo } from "pg-copy-streams";
import { type LedgerEvent, type LedgerEventType, upcastEventData } from "../events";
import type { RecordedEvent } from "./event-store";
import { visibleTransactionOrderBelow } from "./log-visibility";

/**
 * The whole visible log of the PostgreSQL store in one COPY … TO STDOUT, in log order, as pages of
 * events: for rebuilds, which read every event once. Paging with `readAll` re-plans, re-sorts and
 * assembles a JSON document per page; one COPY streams rows as the index gives them, about four times
 * faster here. The stream pauses while the caller works on a page (async iteration applies
 * backpressure), so memory holds one page and the socket's buffers.
 */

const columns = `transaction_order, position, event_id, stream_id, stream_version, type, schema_version, data, metadata,
  (extract(epoch FROM recorded_at) * 1000)::bigint`;

export async function* copyWholeLog(
  pool: pg.Pool,
  transactionOrderOffset: bigint,
  pageSize: number,
): AsyncGenerator<RecordedEvent[]> {
  const client = await pool.connect();
  let complete = false;
  try {
    // The store's visibility rule: only transactions older than every running one, so none lands later.
    const stream = client.query(
      copyTo(
        `COPY (SELECT ${columns} FROM ledger_events
               WHERE transaction_order < ${visibleTransactionOrderBelow(String(transactionOrderOffset))}
               ORDER BY transaction_order, position) TO STDOUT`,
      ),
    );
    yield* pagesOfStream(stream, pageSize);
    complete = true;
  } finally {
    // A COPY left half-read (the caller stopped early or failed) leaves the connection unusable: discard it.
    client.release(complete ? undefined : new Error("the log's COPY was abandoned"));
  }
}

/** Pages ready ahead of the consumer before the stream is paused. */
const pagesAheadMax = 2;

/**
 * Rows arrive one per chunk: awaiting each chunk (async iteration of the stream) cost more than parsing
 * the row. Chunks are parsed synchronously as they come, into a queue of at most `pagesAheadMax` pages.
 */
async function* pagesOfStream(stream: Readable, pageSize: number): AsyncGenerator<RecordedEvent[]> {
  const ready: RecordedEvent[][] = [];
  let page: RecordedEvent[] = [];
  let partial = "";
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const decoder = new StringDecoder("utf8");
  const signal = () => {
    wake?.();
    wake = undefined;
  };
  stream.on("data", (chunk: Buffer) => {
    try {
      const lines = (partial + decoder.write(chunk)).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        page.push(parseLine(line));
        if (page.length === pageSize) {
          ready.push(page);
          page = [];
          if (ready.length >= pagesAheadMax) stream.pause();
          signal();
        }
      }
    } catch (error) {
      failure = error;
      stream.destroy();
      signal();
    }
  });
  stream.on("end", () => {
    if ((partial + decoder.end()).length > 0) failure = new Error("the log's COPY ended inside a row");
    if (page.length > 0) ready.push(page);
    ended = true;
    signal();
  });
  stream.on("error", (error) => {
    failure = error;
    signal();
  });
  for (;;) {
    if (failure) throw failure;
    const next = ready.shift();
    if (next) {
      if (ready.length < pagesAheadMax && stream.isPaused()) stream.resume();
      yield next;
      continue;
    }
    if (ended) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}

function parseLine(line: string): RecordedEvent {
  const fields = line.split("\t");
  if (fields.length !== 10) throw new Error(`a COPY row of the log has ${fields.length} fields, not 10`);
  const type = unescapeField(fields[5]!) as LedgerEventType;
  return {
    type,
    data: upcastEventData(type, Number(fields[6]), JSON.parse(unescapeField(fields[7]!))),
    metadata: JSON.parse(unescapeField(fields[8]!)) as LedgerEvent["metadata"],
    eventId: fields[2]!,
    streamId: unescapeField(fields[3]!),
    streamVersion: Number(fields[4]),
    position: { commit: BigInt(fields[0]!), prepare: BigInt(fields[1]!) },
    recordedAt: new Date(Number(fields[9])),
  } as RecordedEvent;
}

const escapes: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\" };

/** COPY's text format: backslash escapes (PostgreSQL writes no others for these columns). */
function unescapeField(field: string): string {
  if (!field.includes("\\")) return field;
  return field.replace(/\\(.)/g, (_, character: string) => {
    const unescaped = escapes[character];
    if (unescaped === undefined) throw new Error(`unexpected escape \\${character} in the log's COPY`);
    return unescaped;
  });
}
