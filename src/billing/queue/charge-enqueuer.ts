/**
 * How the gateway hands a recorded usage to the reconciler. Enqueueing never blocks or fails a request:
 * the usage is already in the ledger, and the sweeper re-enqueues anything left uncharged.
 */
export interface ChargeEnqueuer {
  enqueueCharge(requestId: string): void;
}
