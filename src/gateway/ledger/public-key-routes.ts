import express, { type Router } from "express";
import { publicKeyPemOf } from "../../ledger/integrity/ledger-signing-key";
import { apiErrors } from "../api-error";

/**
 * `GET /public-key` (mounted at /ledger, no authentication): the public half of the key that signs ledger
 * checkpoints, as PEM. It is what a customer's receipt verifier trusts, so it sits at a stable URL; a
 * deployment without a signing key seals nothing and answers 404/120.
 */
export function createLedgerPublicRouter(publicKey: Buffer | undefined): Router {
  const router = express.Router();
  const pem = publicKey === undefined ? undefined : publicKeyPemOf(publicKey);
  router.get("/public-key", (_request, response) => {
    if (pem === undefined) throw apiErrors.notFound("This ledger has no checkpoint signing key configured");
    response.status(200).type("application/x-pem-file").send(pem);
  });
  return router;
}
