import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Logger } from "pino";

/**
 * This gateway process's heartbeat in `gateway_instances`. The orphan sweep presumes a process dead once
 * its beat is older than a bound, and settles its open holds (C10); a clean stop removes the row after the
 * last request has settled, so nothing of it is left to sweep.
 */
export class GatewayHeartbeat {
  readonly instanceId = `gateway-${randomUUID()}`;
  private timer: NodeJS.Timeout | undefined;
  private failing = false;

  constructor(
    private readonly pool: Pick<pg.Pool, "query">,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  /** Beats once (so the instance exists before its first hold), then every interval. */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => {
      this.beat().then(
        () => {
          if (this.failing) this.logger.info("gateway heartbeat written again");
          this.failing = false;
        },
        (error: unknown) => {
          if (!this.failing) this.logger.error({ err: error }, "writing the gateway heartbeat failed");
          this.failing = true;
        },
      );
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.pool
      .query("DELETE FROM gateway_instances WHERE instance_id = $1", [this.instanceId])
      .catch(() => {});
  }

  private async beat(): Promise<void> {
    await this.pool.query({
      name: "gateway-heartbeat",
      text: `INSERT INTO gateway_instances (instance_id, seen_at) VALUES ($1, now())
             ON CONFLICT (instance_id) DO UPDATE SET seen_at = now()`,
      values: [this.instanceId],
    });
  }
}
