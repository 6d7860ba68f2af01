import type { Router } from "express";
import { z } from "zod";
import {
  type AccountKeyPosition,
  readAccountKeys,
  readDiscountsInForce,
  readPricesInForce,
  searchAccounts,
} from "../../billing/read-models/admin-read-model";
import { readLimits } from "../../kernel/limits";
import {
  accountDigestOf,
  cursorReadFor,
  decodePositionCursor,
  encodePositionCursor,
} from "../../kernel/position-cursor";
import { type AccountReference, accountKinds } from "../../ledger/events";
import { listModels } from "../../providers/catalog";
import { apiErrors } from "../api-error";
import { type AdminContext, parseWith } from "./admin-context";
import { accountPathSchema } from "./admin-request-schemas";

/**
 * The admin read side (for people and a future console): prices and discounts in force, accounts found by
 * id, the keys of an account. Money is a decimal string.
 */

export const accountsQuerySchema = z.object({
  // Empty is no search, as a form's empty field sends it.
  search: z
    .string()
    .max(readLimits.searchTextLengthMax)
    .optional()
    .transform((search) => (search === "" ? undefined : search)),
  kind: z.enum(accountKinds, { error: "must be user or organization" }).optional(),
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${readLimits.accountsPageRowsMax}` })
    .int()
    .min(1)
    .max(readLimits.accountsPageRowsMax)
    .default(readLimits.accountsPageRowsDefault),
  cursor: z.string().min(1).max(1_000).optional(),
});

/** An account's keys a page at a time: all of them (up to the page's maximum) when no limit is given. */
export const accountKeysQuerySchema = z.object({
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${readLimits.accountKeysMax}` })
    .int({ error: `must be an integer from 1 to ${readLimits.accountKeysMax}` })
    .min(1, { error: `must be an integer from 1 to ${readLimits.accountKeysMax}` })
    .max(readLimits.accountKeysMax, { error: `must be an integer from 1 to ${readLimits.accountKeysMax}` })
    .default(readLimits.accountKeysMax),
  cursor: z.string().min(1).max(1_000).optional(),
});

export function addReadRoutes(router: Router, context: AdminContext): void {
  router.get("/prices", async (_request, response) => {
    const inForce = new Map((await readPricesInForce(context.database)).map((price) => [price.model, price]));
    response.json({
      data: listModels().map((model) => {
        const price = inForce.get(model.slug);
        return {
          model: model.slug,
          family: model.family,
          protocol: model.protocol,
          ignoredParameters: model.ignoredParameters,
          // The catalog's default until a price is recorded (start-up seeds one for every model).
          inputUsdPer1M: price?.inputUsdPer1M ?? model.inputUsdPerMillionTokens,
          outputUsdPer1M: price?.outputUsdPer1M ?? model.outputUsdPerMillionTokens,
          cachedInputUsdPer1M: price?.cachedInputUsdPer1M ?? model.cachedInputUsdPerMillionTokens,
          effectiveAt: price?.effectiveAt ?? null,
        };
      }),
    });
  });

  router.get("/discounts", async (_request, response) => {
    response.json({ data: await readDiscountsInForce(context.database) });
  });

  router.get("/accounts", async (request, response) => {
    const query = parseWith(accountsQuerySchema, request.query);
    const page = await searchAccounts(context.database, {
      ...(query.search === undefined ? {} : { search: query.search }),
      ...(query.kind === undefined ? {} : { kind: query.kind }),
      ...(query.cursor === undefined ? {} : { after: accountCursorOf(query.cursor) }),
      limit: query.limit,
    });
    response.json({
      data: page.data,
      nextCursor: page.next === null ? null : Buffer.from(JSON.stringify(page.next)).toString("base64url"),
    });
  });

  router.get("/accounts/:kind/:id/keys", async (request, response) => {
    const account = parseWith(accountPathSchema, request.params);
    const query = parseWith(accountKeysQuerySchema, request.query);
    const page = await readAccountKeys(context.database, account, {
      limit: query.limit,
      after: query.cursor === undefined ? undefined : accountKeyCursorOf(query.cursor, account),
    });
    response.json({
      data: page.data,
      nextCursor:
        page.next === null
          ? null
          : encodePositionCursor(
              { startedAt: page.next.createdAt, requestId: page.next.keyId },
              { account: accountDigestOf(account) },
            ),
    });
  });
}

/**
 * Keys issued in one microsecond are told apart by their id, which a key's cursor holds as a uuid; the cursor
 * names its account, since read among another account's keys it would skip some unseen.
 */
function accountKeyCursorOf(text: string, account: AccountReference): AccountKeyPosition {
  const position = decodePositionCursor(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  if (
    position?.scope === undefined ||
    !cursorReadFor(position.scope, account) ||
    !z.uuid().safeParse(position.requestId).success
  )
    throw apiErrors.validation("cursor: must be a nextCursor returned by a previous page of this account");
  return { createdAt: position.startedAt, keyId: position.requestId };
}

function accountCursorOf(text: string): AccountReference {
  try {
    const parsed = accountPathSchema.safeParse(JSON.parse(Buffer.from(text, "base64url").toString("utf8")));
    if (parsed.success) return parsed.data;
  } catch {
    // Falls through to the error below.
  }
  throw apiErrors.validation("cursor: must be a nextCursor returned by a previous page");
}
