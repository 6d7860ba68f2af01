import type { Router } from "express";
import { OnDemandLedgerVerifier, readLedgerStatus } from "../../ledger/integrity/ledger-status";
import type { AdminContext } from "./admin-context";

/**
 * `GET /ledger/status`: the latest signed checkpoint and its own checks, at constant cost, for every view.
 * `POST /ledger/verify`: every hash chain and checkpoint verified now (a small log only; see ledger-status).
 * EventStoreDB keeps no checkpoints: both answer that the store is not verifiable here.
 */
export function addLedgerStatusRoutes(router: Router, context: AdminContext): void {
  const verifier = new OnDemandLedgerVerifier(context.database, context.ledgerPublicKey);

  router.get("/ledger/status", async (_request, response) => {
    if (context.store.kind !== "postgresql") {
      response.json({
        store: context.store.kind,
        signingKeyConfigured: false,
        latest: null,
        unsealedEventCount: 0,
        unsealedEventCountIsLowerBound: false,
      });
      return;
    }
    const status = await readLedgerStatus(context.database, context.ledgerPublicKey);
    response.json({
      store: context.store.kind,
      signingKeyConfigured: context.ledgerPublicKey !== undefined,
      ...status,
    });
  });

  router.post("/ledger/verify", async (_request, response) => {
    if (context.store.kind !== "postgresql") {
      response.json({ outcome: "unsupported", store: context.store.kind });
      return;
    }
    response.json(await verifier.verify());
  });
}
