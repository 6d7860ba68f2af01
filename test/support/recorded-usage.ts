import type { EventData } from "../../src/ledger/events";
import type { GatewayHarness } from "./gateway-harness";

/**
 * A request's `UsageRecorded` data, once written: the gateway records it after the answer, its hold
 * witnessing it meanwhile (C10), so a test polls for it. Undefined after about 5 s.
 */
export async function recordedUsageOf(
  harness: GatewayHarness,
  requestId: string,
): Promise<EventData<"UsageRecorded"> | undefined> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const result = await harness.service.ledger.pool.query<{ data: EventData<"UsageRecorded"> }>(
      "SELECT data FROM ledger_events WHERE stream_id = $1 AND type = 'UsageRecorded'",
      [`usage-${requestId}`],
    );
    if (result.rows[0]) return result.rows[0].data;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return undefined;
}
