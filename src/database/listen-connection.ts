import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { Logger } from "pino";
import { databaseSessionLimits } from "../kernel/limits";

/**
 * A dedicated LISTEN connection that survives PostgreSQL going away: when the connection drops it
 * reconnects with capped exponential backoff for as long as the process runs (without it, notifications
 * stop for good and every copy fed by them goes stale), logging once when it loses the connection and
 * once when it is back. A NOTIFY sent while it was away is lost, so after every reconnect `onReconnected`
 * runs: the owner re-reads whatever the notifications would have told it.
 */

export interface ListenConnectionOptions {
  connectionString: string;
  channel: string;
  /** Shown in `pg_stat_activity` (and what tests terminate the connection by). */
  applicationName: string;
  /** With the NOTIFY's payload ('' when it had none). */
  onNotification: (payload: string) => void;
  onReconnected: () => void;
  logger?: Logger | undefined;
  reconnectDelayInitialMs?: number;
  reconnectDelayMaxMs?: number;
}

export const listenReconnectDefaults = {
  reconnectDelayInitialMs: databaseSessionLimits.listenReconnectDelayInitialMs,
  reconnectDelayMaxMs: databaseSessionLimits.listenReconnectDelayMaxMs,
  connectTimeoutMs: databaseSessionLimits.listenConnectTimeoutMs,
} as const;

export class ListenConnection {
  private client: pg.Client | undefined;
  private readonly closing = new AbortController();
  private reconnecting = false;

  private constructor(private readonly options: ListenConnectionOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new RangeError(`bad channel ${options.channel}`);
  }

  /** Connects and listens; the first connection must succeed (a process does not start without it). */
  static async open(options: ListenConnectionOptions): Promise<ListenConnection> {
    const connection = new ListenConnection(options);
    await connection.connect();
    return connection;
  }

  /** True while the LISTEN connection is up. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  async close(): Promise<void> {
    this.closing.abort();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: this.options.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: listenReconnectDefaults.connectTimeoutMs,
      query_timeout: listenReconnectDefaults.connectTimeoutMs,
    });
    client.on("notification", (message) => this.options.onNotification(message.payload ?? ""));
    // Registered before connecting: an 'error' event without a listener would crash the process.
    client.on("error", () => this.connectionLost(client));
    client.on("end", () => this.connectionLost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.options.channel}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.closing.signal.aborted) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
  }

  private connectionLost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    if (this.closing.signal.aborted || this.reconnecting) return;
    this.options.logger?.warn(
      { channel: this.options.channel },
      "lost the LISTEN connection to PostgreSQL; reconnecting",
    );
    void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    this.reconnecting = true;
    const lostAtMs = Date.now();
    let delayMs = this.options.reconnectDelayInitialMs ?? listenReconnectDefaults.reconnectDelayInitialMs;
    const delayMaxMs = this.options.reconnectDelayMaxMs ?? listenReconnectDefaults.reconnectDelayMaxMs;
    try {
      // Unbounded on purpose: each attempt is bounded in time, and the process is not whole without it.
      for (let attempt = 1; !this.closing.signal.aborted; attempt += 1) {
        await sleep(delayMs, undefined, { signal: this.closing.signal }).catch(() => {});
        if (this.closing.signal.aborted) return;
        try {
          await this.connect();
        } catch {
          delayMs = Math.min(delayMs * 2, delayMaxMs);
          continue;
        }
        if (this.closing.signal.aborted) return;
        // Lost again at once (its loss was not reported while this loop ran): keep trying.
        if (this.client === undefined) continue;
        this.options.logger?.info(
          { channel: this.options.channel, attempts: attempt, downMs: Date.now() - lostAtMs },
          "LISTEN connection to PostgreSQL restored",
        );
        this.options.onReconnected();
        return;
      }
    } finally {
      this.reconnecting = false;
    }
  }
}
