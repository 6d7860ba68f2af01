import { z } from "zod";
import { receiptPathSchema } from "../../gateway/account/receipt-routes";
import { sessionStatementQuerySchema } from "../../gateway/account/statement-routes";
import { accountPathSchema } from "../../gateway/admin/admin-request-schemas";
import { chargesExportQuerySchema } from "../../gateway/admin/statement-routes";
import { statementQuerySchema } from "../../gateway/statements/statement-response";
import type { ApiRoute } from "./api-route";
import { billingHistorySchema, moneyText } from "./response-schemas";

/** Statements, the finance export, receipts and the ledger's public key, as the API description lists them. */

const instant = z.iso.datetime({ offset: true });
const keyName = z
  .string()
  .nullable()
  .meta({ description: "the key's name, kept after it is deleted; null for a key the ledger never issued" });
/** A receipt carries the charge as its signed event recorded it: six places (docs/api.md, "Money"). */
const recordedMoneyText = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/)
  .meta({ description: "decimal string as recorded in the ledger", example: "3703.701000" });
const hex = z.string().regex(/^[0-9a-f]*$/);

const checkpointSchema = z.object({
  sequence: z.number().int(),
  last: z.string().meta({ description: "log position of the last event it seals" }),
  eventCount: z.number().int(),
  eventsRoot: hex,
  previousCheckpointHash: hex,
  checkpointHash: hex,
  sealedAt: instant,
  signature: hex,
  publicKey: hex,
});

export const statementSchema = z
  .object({
    account: z.object({ kind: z.enum(["user", "organization"]), id: z.string() }),
    month: z.string().meta({ description: "Asia/Seoul month, YYYY-MM" }),
    from: instant,
    to: instant.meta({ description: "exclusive" }),
    currency: z.literal("KRW"),
    openingBalanceWon: moneyText,
    topUpsWon: moneyText,
    chargesWon: moneyText,
    correctionsWon: moneyText.meta({
      description: "what late settlements (C10) added to charges; negative: paid back",
    }),
    closingBalanceWon: moneyText.meta({
      description: "openingBalanceWon + topUpsWon - chargesWon - correctionsWon, exactly (checked)",
    }),
    signConvention: z.string(),
    chargeCount: z.number().int(),
    provisional: z
      .boolean()
      .meta({ description: "the month may still change (not over, or usage not charged)" }),
    checkpoint: checkpointSchema.nullable().meta({ description: "seals every event summed; null: not yet" }),
    topUps: z.array(
      z.object({ eventId: z.string(), occurredAt: instant, amountWon: moneyText, reference: z.string() }),
    ),
    chargesByModel: z.array(
      z.object({
        model: z.string().nullable().meta({
          description:
            "null: the requests of the keys other members of the organization issued, together (what a member reads; C14)",
        }),
        requests: z.number().int(),
        amountWon: moneyText,
      }),
    ),
    chargesByKey: z.array(
      z.object({
        keyId: z.string().nullable().meta({
          description:
            "null: the keys other members of the organization issued, together (what a member reads; C14)",
        }),
        keyName: keyName,
        requests: z.number().int(),
        amountWon: moneyText,
      }),
    ),
    corrections: z.array(
      z.object({
        requestId: z.string().nullable().meta({
          description: "null, with keyId, model and occurredAt: other members' corrections, together (C14)",
        }),
        keyId: z.string().nullable(),
        keyName: keyName,
        model: z.string().nullable(),
        occurredAt: instant.nullable(),
        amountWon: moneyText.meta({ description: "what the correction added to the request's charge" }),
        correctedAmountWon: moneyText.meta({ description: "the request's first charge" }),
      }),
    ),
    charges: billingHistorySchema.shape.data.optional().meta({ description: "with lines=charges" }),
    generatedAt: instant,
  })
  .meta({ title: "MonthlyStatement" });

const receiptSchema = z
  .object({
    format: z.literal("won-ledger-receipt/1"),
    requestId: z.string(),
    account: z.object({ kind: z.enum(["user", "organization"]), id: z.string() }),
    keyId: z.string(),
    model: z.string(),
    endpoint: z.string(),
    startedAt: instant,
    amountWon: recordedMoneyText,
    charges: z.array(
      z.object({
        type: z.string(),
        amountWon: recordedMoneyText,
        breakdown: z.record(z.string(), z.unknown()),
        event: z.object({
          eventId: z.string(),
          streamId: z.string(),
          streamVersion: z.number().int(),
          type: z.string(),
          schemaVersion: z.number().int(),
          data: z.string().meta({ description: "the stored JSON text, byte for byte (hashed)" }),
          metadata: z.string(),
          position: z.string(),
        }),
        chainHash: hex,
        previousHash: hex,
        seal: z.union([
          z.object({
            status: z.literal("sealed"),
            checkpoint: checkpointSchema,
            leafIndex: z.number().int(),
            inclusionPath: z.array(hex),
          }),
          z.object({ status: z.literal("not-sealed"), expectedBy: instant, message: z.string() }),
        ]),
      }),
    ),
    publicKeyPath: z.literal("/ledger/public-key"),
    issuedAt: instant,
  })
  .meta({ title: "ChargeReceipt" });

const statementAnswer = {
  200: {
    description:
      "The statement (JSON below; CSV with format=csv: section,id,date,description,count,amount_won)",
    schema: statementSchema,
  },
};

export const statementAndReceiptRoutes: readonly ApiRoute[] = [
  {
    method: "get",
    path: "/llm/statements",
    tag: "account",
    summary: "The monthly statement of the session's account (personal) or its organization's",
    security: "session",
    query: sessionStatementQuerySchema,
    responses: statementAnswer,
    // 160: a member asking for the organization's charge lines (lines=charges), which are other members' too.
    errors: [100, 110, 160],
  },
  {
    method: "get",
    path: "/llm/receipts/{requestId}",
    tag: "account",
    summary:
      "The verifiable receipt of a request's charge, for the API key that made it or a session of the paying account",
    security: ["apiKey", "session"],
    pathParameters: receiptPathSchema,
    responses: { 200: { description: "The receipt", schema: receiptSchema } },
    errors: [100, 110, 120],
  },
  {
    method: "get",
    path: "/admin/statements/{kind}/{id}",
    tag: "admin",
    summary: "Any account's monthly statement (Asia/Seoul month)",
    security: "admin",
    pathParameters: accountPathSchema,
    query: statementQuerySchema,
    responses: statementAnswer,
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/admin/exports/charges",
    tag: "admin",
    summary: "The month's charges of every account as one CSV with the billing history's columns, streamed",
    security: "admin",
    query: chargesExportQuerySchema,
    responses: {
      200: {
        description:
          "CSV, as the file charges-YYYY-MM.csv; while the month may still change (as a statement's provisional), charges-YYYY-MM-provisional.csv, with the header x-export-provisional: true",
        contentType: "text/csv",
        schema: z.string(),
      },
    },
    errors: [100, 110],
  },
  {
    method: "get",
    path: "/ledger/public-key",
    tag: "operations",
    summary:
      "The public half of the key that signs ledger checkpoints (PEM), what receipts are verified with",
    security: "none",
    responses: {
      200: {
        description: "PEM (SPKI) public key",
        contentType: "application/x-pem-file",
        schema: z.string(),
      },
    },
    errors: [120],
  },
];
