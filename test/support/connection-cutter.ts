import net from "node:net";

/**
 * A TCP relay in front of a server (PostgreSQL here) that a test can cut: `cut()` drops every connection
 * and refuses new ones, as a server restarting does to its clients; `restore()` lets them in again. What
 * the clients see is what a restart shows them: connections reset mid-transaction, then refused.
 */
export interface ConnectionCutter {
  port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startConnectionCutter(target: {
  host: string;
  port: number;
}): Promise<ConnectionCutter> {
  const open = new Set<net.Socket>();
  let isCut = false;
  const server = net.createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      isCut = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    restore: () => {
      isCut = false;
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A cutter in front of the database at `databaseUrl`, and the URL that reaches that database through it. */
export async function cutterInFrontOf(
  databaseUrl: string,
): Promise<{ cutter: ConnectionCutter; url: string }> {
  const url = new URL(databaseUrl);
  const cutter = await startConnectionCutter({ host: url.hostname, port: Number(url.port || 5432) });
  url.port = String(cutter.port);
  return { cutter, url: url.toString() };
}
