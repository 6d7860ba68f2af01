/** Server-sent events as the playground reads them from a fetch body. */

/** The `data:` payloads of a server-sent-event buffer; returns the unfinished tail to keep for the next read. */
export function takeSseData(buffer: string): { payloads: string[]; rest: string } {
  const events = buffer.split(/\r?\n\r?\n/);
  const rest = events.pop() ?? "";
  const payloads: string[] = [];
  for (const event of events) {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data) payloads.push(data);
  }
  return { payloads, rest };
}
