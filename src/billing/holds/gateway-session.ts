import type pg from "pg";
import type { Logger } from "pino";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";

/**
 * This gateway process's session: an advisory lock keyed by its instance id, held on a connection of its own
 * for as long as the process runs. PostgreSQL frees it as soon as the process dies (its socket closes), and
 * keeps it while the process is paused or cut off without its connection being closed: the orphan sweep reads
 * it (`ledger_gateway_session_alive`) to tell a gateway that will never bill again from one that may still
 * deliver and bill what it delivered, whose swept holds it keeps money back for (swept-hold-reserves.ts).
 * Unlike a leader's session, it has no idle bound: a paused process must keep it.
 *
 * A lost connection (the server restarted, the backend was ended, the network reset it) is replaced and the
 * lock taken again every `retryMs` until it is; meanwhile the sweep sees this process as without its session,
 * as a dead one, and keeps nothing back for it: `onLost` and `onTaken` tell the process (its requests' output
 * waits meanwhile, hold-progress.ts).
 */

export interface GatewaySessionEvents {
  onLost: () => void;
  onTaken: () => void;
}
export class GatewaySession {
  private client: pg.PoolClient | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly pool: Pick<pg.Pool, "connect">,
    private readonly instanceId: string,
    private readonly retryMs: number,
    private readonly logger: Logger,
    private readonly events: GatewaySessionEvents,
  ) {}

  /** Takes the session (before this process's first hold, so no hold of it is ever swept without it). */
  async start(): Promise<void> {
    await this.take();
  }

  /** Ends the session: its connection closed, the lock is free (nothing of this process is left to settle). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    client?.release(true);
  }

  private async take(): Promise<void> {
    const client = await this.pool.connect();
    const lost = (error: Error) => this.lost(client, error);
    client.on("error", lost);
    try {
      const taken = await client.query<{ taken: boolean }>(
        "SELECT pg_try_advisory_lock($1, hashtext($2)) AS taken",
        [advisoryLockKeys.gatewaySession, this.instanceId],
      );
      // The backend of a connection lost without a word may hold it until the server notices.
      if (!taken.rows[0]!.taken) throw new Error("this gateway's session is still held by a lost connection");
    } catch (error) {
      client.off("error", lost);
      client.release(true);
      throw error;
    }
    if (this.stopped) {
      client.release(true);
      return;
    }
    this.client = client;
    this.events.onTaken();
  }

  private lost(client: pg.PoolClient, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.release(true);
    if (this.stopped) return;
    this.events.onLost();
    this.logger.error({ err: error }, "the gateway's session was lost; taking it again");
    this.takeAgainLater();
  }

  private takeAgainLater(): void {
    this.retry = setTimeout(() => {
      this.take().then(
        () => {
          // Every retake follows a loss, which was logged: say it is over.
          this.logger.info("the gateway's session is taken again");
          this.failing = false;
        },
        (error: unknown) => {
          if (!this.failing) this.logger.error({ err: error }, "taking the gateway's session again failed");
          this.failing = true;
          if (!this.stopped) this.takeAgainLater();
        },
      );
    }, this.retryMs);
    this.retry.unref();
  }
}
