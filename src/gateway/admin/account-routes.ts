import type { Router } from "express";
import { IdempotencyKeyReusedError, topUpCredit } from "../../billing/commands/top-up-credit";
import { readAccountFunds } from "../../billing/read-models/account-balances";
import { readUnpriceablePending } from "../../billing/read-models/unpriceable-pending-charges";
import { apiErrors } from "../api-error";
import { type AdminContext, adminOriginOf, parseWith, writeDependenciesOf } from "./admin-context";
import { accountPathSchema, creditBodySchema, creditHeadersSchema } from "./admin-request-schemas";

/**
 * `POST /accounts/:kind/:id/credits` → 201 `{ balanceWon }`, the balance once the top-up is applied.
 * `GET /accounts/:kind/:id` → `{ kind, id, balanceWon, pendingWon, heldWon, unpriceablePending }`: the first
 * three from one row of the ledger's funds, as `GET /llm/balance` reads them (`pendingWon` is the usage
 * recorded but not charged yet at the cost recorded with it, `heldWon` what requests in flight hold, C10);
 * `unpriceablePending` the part of that usage the reconciler cannot price, which stays pending until an
 * operator records a price or a rate.
 */
export function addAccountRoutes(router: Router, context: AdminContext): void {
  router.post("/accounts/:kind/:id/credits", async (request, response) => {
    const account = parseWith(accountPathSchema, request.params);
    const headers = parseWith(creditHeadersSchema, request.headers);
    const body = parseWith(creditBodySchema, request.body);
    const { balanceWon } = await topUpCredit(
      { ...writeDependenciesOf(context), database: context.database },
      {
        account,
        amountWon: body.amountWon,
        reference: body.reference,
        idempotencyKey: headers["idempotency-key"],
      },
      adminOriginOf(response.locals),
    ).catch((error: unknown) => {
      if (error instanceof IdempotencyKeyReusedError) throw apiErrors.validation(error.message);
      throw error;
    });
    response.status(201).json({ balanceWon });
  });

  router.get("/accounts/:kind/:id", async (request, response) => {
    const account = parseWith(accountPathSchema, request.params);
    const { balanceWon, pendingWon, heldWon } = await readAccountFunds(context.database, account);
    const unpriceablePending = await readUnpriceablePending(context.database, account);
    response.json({
      kind: account.kind,
      id: account.id,
      balanceWon,
      pendingWon,
      heldWon,
      unpriceablePending,
    });
  });
}
