import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { ChargeEnqueuer } from "../../billing/charge-enqueuer";
import type { EventData } from "../../ledger/events";
import type { GroupCommitAppender } from "../../ledger/group-commit-appender";

export type UsageToRecord = EventData<"UsageRecorded">;

const attemptsMax = 4;
const retryDelayMs = [50, 250, 1_000] as const;

/**
 * Appends `UsageRecorded` (stream `usage-<requestId>`, which must not exist yet) and hands the request to
 * the reconciler. Transient ledger failures are retried a few times; the caller decides what a final
 * failure means (503 before a JSON reply; an error event on a stream).
 */
export class UsageRecorder {
  constructor(
    private readonly appender: GroupCommitAppender,
    private readonly charges: ChargeEnqueuer,
    private readonly logger: Logger,
  ) {}

  async record(usage: UsageToRecord): Promise<void> {
    const append = {
      streamId: `usage-${usage.requestId}`,
      expectedVersion: "no-stream" as const,
      events: [
        {
          // One id for every attempt, so a retry after an ambiguous failure cannot record twice.
          eventId: randomUUID(),
          event: {
            type: "UsageRecorded" as const,
            data: usage,
            metadata: {
              actor: `key:${usage.keyId}`,
              correlationId: usage.requestId,
              occurredAt: new Date().toISOString(),
            },
          },
        },
      ],
    };
    for (let attempt = 1; ; attempt++) {
      try {
        await this.appender.append(append);
        break;
      } catch (error) {
        if (attempt >= attemptsMax) throw error;
        this.logger.warn(
          { err: error, requestId: usage.requestId, attempt },
          "recording usage failed; retrying",
        );
        await new Promise((resolve) => setTimeout(resolve, retryDelayMs[attempt - 1]));
      }
    }
    this.charges.enqueueCharge(usage.requestId);
  }
}
