import type { Router } from "express";
import { IdempotencyKeyReusedError, topUpCredit } from "../../billing/commands/top-up-credit";
import { readAccountFunds } from "../../billing/read-models/account-balances";
import { readAccountView } from "../../billing/read-models/account-view";
import { apiErrors } from "../api-error";
import { type AdminContext, adminOriginOf, parseWith, writeDependenciesOf } from "./admin-context";
import { accountPathSchema, creditBodySchema, creditHeadersSchema } from "./admin-request-schemas";

/**
 * `POST /accounts/:kind/:id/credits` → 201 `{ balanceWon }`, the balance once the top-up is applied.
 * `GET /accounts/:kind/:id` → `{ kind, id, balanceWon, pendingWon, heldWon }`; `pendingWon` is the usage
 * recorded but not charged yet, priced exactly as the reconciler will price it (pending-charges-valuation.ts);
 * `heldWon` what requests in flight hold (C10).
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
    const { balanceWon, pendingWon } = await readAccountView(context.database, account);
    const { heldWon } = await readAccountFunds(context.database, account);
    response.json({ kind: account.kind, id: account.id, balanceWon, pendingWon, heldWon });
  });
}
