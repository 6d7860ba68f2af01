import type { ClientBase } from "pg";
import { z } from "zod";
import { type LogPosition, parseLogPosition } from "../store/log-position";
import { checkpointHashOf, checkpointsAfter, type LedgerCheckpoint } from "./ledger-checkpoint";
import { verifySignature } from "./ledger-signing-key";

/**
 * A checkpoint as `ledger checkpoint` printed it and an operator published it, somewhere the database's
 * administrators cannot write. The log's own checks cannot see events removed together with the checkpoints
 * that sealed them, nor a log rewritten and re-sealed by a holder of the signing key; the published copy can:
 * the ledger must still hold that checkpoint, identical, for everything it sealed to be as it was.
 */

type Queryable = Pick<ClientBase, "query">;

const hexBytes = (bytes: number) =>
  z
    .string()
    .regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `${bytes} bytes in lowercase hex`)
    .transform((hex) => Buffer.from(hex, "hex"));

const logPosition = z.string().transform((text, context): LogPosition => {
  try {
    return parseLogPosition(text);
  } catch {
    context.addIssue({ code: "custom", message: "a log position such as 1234-56" });
    return z.NEVER;
  }
});

const publishedCheckpointSchema = z.object({
  sequence: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  last: logPosition,
  eventCount: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 1),
  eventsRoot: hexBytes(32),
  previousCheckpointHash: hexBytes(32),
  checkpointHash: hexBytes(32),
  sealedAt: z.iso.datetime().transform((text) => new Date(text)),
  signature: hexBytes(64),
  publicKey: hexBytes(32),
});

/**
 * The published checkpoint in `text`, or why it is none: not JSON of its shape, fields that do not hash to
 * its hash, or (given the key the ledger trusts) a signature that key did not make.
 */
export function parsePublishedCheckpoint(
  text: string,
  trustedPublicKey: Buffer | undefined,
): { checkpoint: LedgerCheckpoint } | { refusal: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { refusal: "not JSON: give the checkpoint as `npm run ledger -- checkpoint` printed it" };
  }
  const parsed = publishedCheckpointSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { refusal: `${issue.path.join(".") || "the checkpoint"}: ${issue.message}` };
  }
  const checkpoint = parsed.data;
  const recomputed = checkpointHashOf(checkpoint);
  if (!recomputed.equals(checkpoint.checkpointHash))
    return { refusal: `checkpoint #${checkpoint.sequence}'s fields do not hash to its checkpointHash` };
  if (trustedPublicKey && !verifySignature(trustedPublicKey, recomputed, checkpoint.signature))
    return {
      refusal: `checkpoint #${checkpoint.sequence}'s signature is not valid under the ledger signing key: not a checkpoint this ledger sealed, or LEDGER_SIGNING_KEY is another key`,
    };
  return { checkpoint };
}

/** What differs between the published checkpoint and the ledger's checkpoint of its sequence; empty when none. */
export async function publishedCheckpointProblems(
  client: Queryable,
  published: LedgerCheckpoint,
): Promise<string[]> {
  const name = `published checkpoint #${published.sequence}`;
  const [stored] = await checkpointsAfter(client, published.sequence - 1, 1);
  if (stored?.sequence !== published.sequence)
    return [`${name} is missing from the ledger (removed, with the events it sealed or after them)`];
  if (!stored.checkpointHash.equals(published.checkpointHash))
    return [
      `${name} differs from the ledger's checkpoint #${published.sequence} (the log up to it was rewritten and sealed again)`,
    ];
  return [];
}
