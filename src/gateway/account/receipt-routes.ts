import express, { type RequestHandler, type Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { organizationKeyIssuersTable } from "../../../projections/organization-members";
import {
  buildChargeReceipt,
  type ChargeReceipt,
  readChargeEvents,
  receiptOwnerOf,
} from "../../billing/receipts/charge-receipt";
import { readLimits } from "../../kernel/limits";
import { looksLikeApiKey } from "../../keys/api-key-secret";
import type { OrganizationRoleService } from "../../keys/organization-role-service";
import type { AccountReference } from "../../ledger/events";
import type { Session } from "../../sessions/session-tokens";
import { isResponseId, readRequestIdsOfResponse } from "../activity/activity-read-model";
import { apiErrors, validationErrorOf } from "../api-error";
import type { Caller } from "../generation/api-key-admission";
import { storableString } from "../http/storable-string";
import { bearerTokenOf } from "../middleware/authenticate-session";
import { activityIssuerOf } from "./activity-routes";

/**
 * `GET /receipts/:requestId` (mounted at /llm): the receipt of a request's charge, for the API key that
 * made the request or a session of the account that paid for it. The request is named by its `x-request-id`
 * or by its reply body's id (`chatcmpl-…`, `resp-…`, what an SDK shows); when requests the caller may read
 * on different gateways share that id, each one's receipt is listed (`{ object: "list", data }`). A member
 * of an organization who is neither owner nor admin reads the receipts of the keys they issued (C14, as the
 * activity log). Anyone else gets the same 404/120 as for a request that does not exist, so an id reveals
 * nothing about other accounts or members.
 */

export interface ReceiptRouterDependencies {
  database: Pick<pg.Pool, "query">;
  /** Authenticates an API key (inactive or deleted keys are refused); credit is not required. */
  authenticateKey(authorizationHeader: string | undefined): Promise<Pick<Caller, "keyId">>;
  /** The session middleware of the other /llm routes (bearer or cookie). */
  sessionRequired: RequestHandler;
  roles: Pick<OrganizationRoleService, "roleOf">;
  clock?: () => Date;
}

type ReceiptCaller =
  | { kind: "key"; keyId: string }
  | {
      kind: "session";
      session: Session;
      /** For an organization's request: the member whose keys alone the session reads, if any (C14). */
      issuerOf: (account: AccountReference) => Promise<string | undefined>;
    };

/** A request id (`x-request-id`) or a reply's id; text the ledger cannot hold is no id at all (400/100). */
export const receiptPathSchema = z.object({ requestId: storableString.min(1).max(200) });

export function createReceiptRouter(dependencies: ReceiptRouterDependencies): Router {
  const router = express.Router();
  const clock = dependencies.clock ?? (() => new Date());

  router.use(async (request, response, next) => {
    const bearer = bearerTokenOf(request);
    if (bearer === undefined || !looksLikeApiKey(bearer)) {
      dependencies.sessionRequired(request, response, next);
      return;
    }
    const caller = await dependencies.authenticateKey(request.headers.authorization);
    response.locals.receiptKeyId = caller.keyId;
    next();
  });

  router.get("/:requestId", async (request, response) => {
    const caller: ReceiptCaller =
      typeof response.locals.receiptKeyId === "string"
        ? { kind: "key", keyId: response.locals.receiptKeyId }
        : {
            kind: "session",
            session: response.locals.session as Session,
            issuerOf: (account) => activityIssuerOf(dependencies.roles, response.locals, account),
          };
    const path = receiptPathSchema.safeParse(request.params);
    if (!path.success) throw validationErrorOf(path.error);
    const { requestId } = path.data;
    const receipts = await readableReceipts(dependencies.database, caller, requestId, clock());
    // The charge is posted after the answer: the owner asking at once gets this too, and should ask again.
    if (receipts.length === 0)
      throw apiErrors.notFound(
        `No receipt for request ${requestId}: it is not charged yet (a request is charged in the seconds after its answer: ask again then) or not yours`,
      );
    // One request: its receipt. A response id two gateways gave the caller's requests: each, listed.
    response.json(receipts.length === 1 ? receipts[0] : { object: "list", data: receipts });
  });
  return router;
}

/** The receipts of the request named (by `x-request-id` or response id) that the caller may read. */
async function readableReceipts(
  database: Pick<pg.Pool, "query">,
  caller: ReceiptCaller,
  id: string,
  now: Date,
): Promise<ChargeReceipt[]> {
  const requestIds = isResponseId(id)
    ? await readRequestIdsOfResponse(database, id, readLimits.requestsPerResponseIdMax)
    : [id];
  const receipts: ChargeReceipt[] = [];
  for (const requestId of requestIds) {
    const rows = await readChargeEvents(database, requestId);
    if (rows.length > 0 && (await mayRead(database, caller, receiptOwnerOf(rows))))
      receipts.push(await buildChargeReceipt(database, rows, now));
  }
  return receipts;
}

async function mayRead(
  database: Pick<pg.Pool, "query">,
  caller: ReceiptCaller,
  owner: { keyId: string; account: AccountReference },
): Promise<boolean> {
  switch (caller.kind) {
    case "key":
      return caller.keyId === owner.keyId;
    case "session": {
      if (owner.account.kind === "user") return owner.account.id === caller.session.userId;
      if (owner.account.id !== caller.session.organizationId) return false;
      const issuer = await caller.issuerOf(owner.account);
      return issuer === undefined || (await isOrganizationKeyIssuedBy(database, owner.keyId, issuer));
    }
    default: {
      const unreachable: never = caller;
      throw new Error(`unhandled caller ${String(unreachable)}`);
    }
  }
}

async function isOrganizationKeyIssuedBy(
  database: Pick<pg.Pool, "query">,
  keyId: string,
  userId: string,
): Promise<boolean> {
  const result = await database.query(
    `SELECT 1 FROM ${organizationKeyIssuersTable.name} WHERE key_id = $1 AND issued_by_user_id = $2`,
    [keyId, userId],
  );
  return (result.rowCount ?? 0) > 0;
}
