import { formatMoney, Money, parseMoney } from "../../kernel/money";
import type { ChargeBreakdownData } from "../../ledger/events";
import { eventChainHash } from "../../ledger/integrity/event-hash";
import { checkpointHashOf } from "../../ledger/integrity/ledger-checkpoint";
import { rawPublicKeyOfPem, verifySignature } from "../../ledger/integrity/ledger-signing-key";
import { rootFromInclusionPath } from "../../ledger/integrity/merkle-tree";
import { parseLogPosition } from "../../ledger/store/log-position";
import { calculateCharge, chargeInputOfBreakdown } from "../charging/charge-calculation";
import { usageStreamIdOf } from "../charging/charge-usage";
import { chargeBreakdownOfRecorded } from "../charging/recorded-charge-breakdown";
import {
  type ChargeReceipt,
  chargeEventTypes,
  type ReceiptCharge,
  type ReceiptSeal,
  receiptFormat,
} from "./charge-receipt";

/**
 * `npm run ledger -- verify-receipt <file>`: a receipt's checks with the ledger's own code (the hash chain,
 * RFC 6962 path, checkpoint hash and signature, and the C7 charge calculation). The stand-alone
 * verify-receipt.mjs re-implements the same checks with node:crypto only, naming failures in the same words;
 * test/billing/receipts proves the two agree.
 */

const hexPattern = (bytes: number) => new RegExp(`^[0-9a-f]{${bytes * 2}}$`);

function hex(value: unknown, bytes: number, name: string): Buffer {
  if (typeof value !== "string" || !hexPattern(bytes).test(value))
    throw new Error(`${name} is not ${bytes} bytes of hex`);
  return Buffer.from(value, "hex");
}

function decimal(value: unknown, name: string): Money {
  if (typeof value !== "string") throw new Error(`${name} is not a decimal string`);
  try {
    return parseMoney(value);
  } catch {
    throw new Error(`${name} is not a decimal string`);
  }
}

interface ChargeData {
  requestId?: unknown;
  amountWon?: unknown;
  breakdown: ChargeBreakdownData;
  correction?: { correctsEventId: string; correctedAmountWon: string } | null;
}

/** As verify-receipt.mjs: a correction's (C10) amount is its breakdown's less the earlier charge it corrects. */
function checkAmount(
  charge: ReceiptCharge,
  data: ChargeData,
  earlier: readonly { eventId: string; data: ChargeData }[],
  failures: string[],
  label: string,
): void {
  try {
    const recomputed = calculateCharge(chargeInputOfBreakdown(chargeBreakdownOfRecorded(data.breakdown)));
    const usd = new Money(recomputed.amountUsd);
    const won = new Money(recomputed.amountWon);
    if (!usd.equals(decimal(data.breakdown.usd, "breakdown.usd")))
      failures.push(
        `amount: ${label}: breakdown.usd ${data.breakdown.usd} is not ${formatMoney(usd)}, what its tokens and prices give`,
      );
    if (!won.equals(decimal(data.breakdown.amountWon, "breakdown.amountWon")))
      failures.push(
        `amount: ${label}: breakdown.amountWon ${data.breakdown.amountWon} is not ${recomputed.amountWon}, what the breakdown gives`,
      );
    const breakdownWon = decimal(data.breakdown.amountWon, "breakdown.amountWon");
    const correction = data.correction ?? null;
    if (correction === null) {
      if (!decimal(data.amountWon, "amountWon").equals(breakdownWon))
        failures.push(
          `amount: ${label}: charged ${String(data.amountWon)}, not the breakdown's ${data.breakdown.amountWon}`,
        );
    } else {
      const correctedWon = decimal(correction.correctedAmountWon, "correction.correctedAmountWon");
      if (!decimal(data.amountWon, "amountWon").equals(breakdownWon.minus(correctedWon)))
        failures.push(
          `amount: ${label}: charged ${String(data.amountWon)}, not the breakdown's ${data.breakdown.amountWon} less the corrected ${correction.correctedAmountWon}`,
        );
      const corrected = earlier.find((previous) => previous.eventId === correction.correctsEventId);
      if (
        !corrected ||
        !decimal(corrected.data.breakdown.amountWon, "breakdown.amountWon").equals(correctedWon)
      )
        failures.push(
          `amount: ${label}: corrects no earlier charge of ${correction.correctedAmountWon} in this receipt`,
        );
    }
    if (charge.amountWon !== data.amountWon)
      failures.push(
        `amount: ${label}: the receipt shows ${charge.amountWon}, the event says ${String(data.amountWon)}`,
      );
  } catch (error) {
    failures.push(`amount: ${label}: ${(error as Error).message}`);
  }
}

/**
 * As verify-receipt.mjs given a PEM: a receipt that is none is said first, then a key that is no Ed25519
 * public key (a verdict on what was given, in the script's words), then every failed check under the key.
 */
/**
 * As verify-receipt.mjs: a file's failures, a receipt's own or, for the list answered for a body id several
 * of the caller's requests share (`{ "object": "list", "data": [receipt, …] }`), each receipt's, named by its
 * place.
 */
function receiptFileFailures(
  document: unknown,
  receiptFailuresOf: (receipt: ChargeReceipt) => string[],
): string[] {
  const list = document as { object?: unknown; data?: unknown } | null;
  if (list?.object !== "list") return receiptFailuresOf(document as ChargeReceipt);
  const receipts = list.data;
  if (!Array.isArray(receipts) || receipts.length === 0) return ["format: the list holds no receipt"];
  return receipts.flatMap((receipt: ChargeReceipt, index) =>
    receiptFailuresOf(receipt).map((failure) => `receipt ${index + 1} of ${receipts.length}: ${failure}`),
  );
}

/**
 * As verify-receipt.mjs: receiptFileFailures of a file's text; a file cut short or not JSON is a format
 * failure.
 */
export function receiptTextFailures(
  text: string,
  receiptFailuresOf: (receipt: ChargeReceipt) => string[],
): string[] {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return ["format: the file is not JSON"];
  }
  return receiptFileFailures(document, receiptFailuresOf);
}

export function receiptFailuresUnderPem(receipt: ChargeReceipt, publicKeyPem: string): string[] {
  const notReceipt = notReceiptFailure(receipt);
  if (notReceipt) return [notReceipt];
  let publicKey: Buffer;
  try {
    publicKey = rawPublicKeyOfPem(publicKeyPem);
  } catch (error) {
    return [
      error instanceof RangeError
        ? "signature: the public key is not an Ed25519 key"
        : "signature: the public key is not a PEM public key",
    ];
  }
  return receiptFailures(receipt, publicKey);
}

/** Every failed check of `receipt` under the trusted raw Ed25519 key, each "name: why"; empty when valid. */
export function receiptFailures(receipt: ChargeReceipt, trustedPublicKey: Buffer): string[] {
  const notReceipt = notReceiptFailure(receipt);
  if (notReceipt) return [notReceipt];
  const failures: string[] = [];
  const earlier: { eventId: string; data: ChargeData }[] = [];
  let lastData: ChargeData | undefined;
  receipt.charges.forEach((charge, index) => {
    const label = `charge ${index + 1} (${charge?.event?.type ?? "?"} ${charge?.event?.eventId ?? "?"})`;
    const data = parseChargeData(charge, failures, label);
    if (data === undefined) return;
    lastData = data;
    checkRequest(receipt, charge, data, failures, label);
    checkCopies(receipt, charge, data, index === 0, failures, label);
    const chainHash = checkChain(charge, failures, label);
    checkAmount(charge, data, earlier, failures, label);
    earlier.push({ eventId: charge.event.eventId, data });
    checkSeal(charge, chainHash, trustedPublicKey, failures, label);
  });
  checkTotal(receipt, earlier, lastData, failures);
  return failures;
}

/** Why `receipt` is no receipt to check at all, if it is none. */
function notReceiptFailure(receipt: ChargeReceipt): string | undefined {
  if (receipt?.format !== receiptFormat) return `format: not a ${receiptFormat} receipt`;
  if (!Array.isArray(receipt.charges) || receipt.charges.length === 0)
    return "format: the receipt holds no charge";
  return undefined;
}

/** The event's data, or undefined (and a failure) when its data or metadata is not JSON, or its data no object. */
function parseChargeData(charge: ReceiptCharge, failures: string[], label: string): ChargeData | undefined {
  let data: unknown;
  try {
    data = JSON.parse(charge.event.data);
    JSON.parse(charge.event.metadata);
  } catch {
    failures.push(`format: ${label}: the event's data or metadata is not JSON`);
    return undefined;
  }
  // Every check reads the data's fields: data that is null, a list or a scalar is no charge to check.
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    failures.push(`format: ${label}: the event's data is not a JSON object`);
    return undefined;
  }
  // The amount is checked from the breakdown's tokens and prices: a charge without one cannot be checked.
  const breakdown = (data as { breakdown?: unknown }).breakdown;
  if (breakdown === null || typeof breakdown !== "object" || Array.isArray(breakdown)) {
    failures.push(`format: ${label}: the event's data has no breakdown object`);
    return undefined;
  }
  return data as ChargeData;
}

/** A receipt's charges must all be charge events of its own request, on that request's usage stream. */
function checkRequest(
  receipt: ChargeReceipt,
  charge: ReceiptCharge,
  data: ChargeData,
  failures: string[],
  label: string,
): void {
  if (
    !(chargeEventTypes as readonly string[]).includes(charge.event.type) ||
    data.requestId !== receipt.requestId ||
    charge.event.streamId !== usageStreamIdOf(receipt.requestId)
  )
    failures.push(`request: ${label}: not a charge of request ${receipt.requestId}`);
}

/**
 * What the receipt shows beside the sealed events, for people to read — each charge's type, amount and
 * breakdown, and the request's account, key, model, endpoint and start (from its first charge) — must be
 * what the events say: a copy altered would show a reader figures the ledger never held.
 */
function checkCopies(
  receipt: ChargeReceipt,
  charge: ReceiptCharge,
  data: ChargeData,
  first: boolean,
  failures: string[],
  label: string,
): void {
  const differing = [
    ...(charge.type === charge.event.type ? [] : ["type"]),
    ...(sameJson(charge.breakdown, data.breakdown) ? [] : ["breakdown"]),
  ];
  if (first)
    for (const field of ["account", "keyId", "model", "endpoint", "startedAt"] as const)
      if (!sameJson(receipt[field], (data as unknown as Record<string, unknown>)[field]))
        differing.push(field);
  if (differing.length > 0)
    failures.push(`copies: ${label}: the receipt's ${differing.join(", ")} differ from what the event says`);
}

/** Equal as JSON values, whatever the order of their keys. */
function sameJson(one: unknown, other: unknown): boolean {
  return JSON.stringify(sortedKeys(one)) === JSON.stringify(sortedKeys(other));
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([one], [other]) => (one < other ? -1 : one > other ? 1 : 0))
      .map(([key, entry]) => [key, sortedKeys(entry)]),
  );
}

/** The event's bytes rehashed onto the previous hash; answers the chain hash for the inclusion check. */
function checkChain(charge: ReceiptCharge, failures: string[], label: string): Buffer | undefined {
  let chainHash: Buffer | undefined;
  try {
    chainHash = hex(charge.chainHash, 32, "chainHash");
    const recomputed = eventChainHash(hex(charge.previousHash, 32, "previousHash"), {
      streamId: charge.event.streamId,
      streamVersion: charge.event.streamVersion,
      eventId: charge.event.eventId,
      type: charge.event.type,
      schemaVersion: charge.event.schemaVersion,
      dataText: charge.event.data,
      metadataText: charge.event.metadata,
    });
    if (!recomputed.equals(chainHash))
      failures.push(
        `chain: ${label}: the event's bytes do not hash to its chain hash (the event was altered)`,
      );
  } catch (error) {
    failures.push(`chain: ${label}: ${(error as Error).message}`);
  }
  return chainHash;
}

/** The charge's seal: its inclusion in a checkpoint, the checkpoint's hash, and the checkpoint's signature. */
function checkSeal(
  charge: ReceiptCharge,
  chainHash: Buffer | undefined,
  trustedPublicKey: Buffer,
  failures: string[],
  label: string,
): void {
  const seal = charge.seal;
  if (seal?.status !== "sealed") {
    failures.push(
      `not-sealed: ${label}: not sealed by a signed checkpoint yet${seal?.expectedBy ? `; expected by ${seal.expectedBy}` : ""}`,
    );
    return;
  }
  try {
    assertWellFormedSeal(seal);
    const checkpoint = seal.checkpoint;
    const path = seal.inclusionPath.map((sibling, step) => hex(sibling, 32, `inclusionPath[${step}]`));
    let root: Buffer | undefined;
    try {
      root = chainHash && rootFromInclusionPath(chainHash, seal.leafIndex, checkpoint.eventCount, path);
    } catch {
      root = undefined;
    }
    if (!root?.equals(hex(checkpoint.eventsRoot, 32, "eventsRoot")))
      failures.push(
        `inclusion: ${label}: the inclusion path does not lead to checkpoint #${checkpoint.sequence}'s events root`,
      );
    const checkpointHash = recomputedCheckpointHash(checkpoint);
    if (!checkpointHash.equals(hex(checkpoint.checkpointHash, 32, "checkpointHash")))
      failures.push(
        `checkpoint: ${label}: checkpoint #${checkpoint.sequence}'s hash does not recompute from its fields`,
      );
    if (!verifySignature(trustedPublicKey, checkpointHash, hex(checkpoint.signature, 64, "signature")))
      failures.push(
        `signature: ${label}: checkpoint #${checkpoint.sequence} is not signed by the published key`,
      );
  } catch (error) {
    failures.push(`checkpoint: ${label}: ${(error as Error).message}`);
  }
}

type SealedCheckpoint = Extract<ReceiptSeal, { status: "sealed" }>["checkpoint"];

/**
 * A receipt is the customer's file, whatever it holds: a seal's fields of the wrong kind are named, as
 * verify-receipt.mjs names them, before any is used.
 */
function assertWellFormedSeal(seal: Extract<ReceiptSeal, { status: "sealed" }>): void {
  const checkpoint = seal.checkpoint as Partial<SealedCheckpoint> | null;
  if (checkpoint === null || typeof checkpoint !== "object") throw new Error("checkpoint is not an object");
  if (!Array.isArray(seal.inclusionPath)) throw new Error("inclusionPath is not a list of hashes");
  if (!Number.isSafeInteger(checkpoint.sequence) || checkpoint.sequence! < 1)
    throw new Error("checkpoint.sequence is not a sequence number");
  if (
    !Number.isSafeInteger(checkpoint.eventCount) ||
    checkpoint.eventCount! < 1 ||
    checkpoint.eventCount! > 2 ** 31 - 1
  )
    throw new Error("checkpoint.eventCount is not a count of events");
  if (typeof checkpoint.last !== "string" || !/^(-?\d+)-(-?\d+)$/.test(checkpoint.last))
    throw new Error("checkpoint.last is not a log position");
  if (typeof checkpoint.sealedAt !== "string" || Number.isNaN(Date.parse(checkpoint.sealedAt)))
    throw new Error("checkpoint.sealedAt is not an instant");
}

/** The checkpoint's hash from its fields; throws on a field that is not well-formed hex. */
function recomputedCheckpointHash(checkpoint: SealedCheckpoint): Buffer {
  return checkpointHashOf({
    sequence: checkpoint.sequence,
    last: parseLogPosition(checkpoint.last),
    eventCount: checkpoint.eventCount,
    eventsRoot: hex(checkpoint.eventsRoot, 32, "checkpoint.eventsRoot"),
    previousCheckpointHash: hex(checkpoint.previousCheckpointHash, 32, "checkpoint.previousCheckpointHash"),
    sealedAt: new Date(checkpoint.sealedAt),
  });
}

/** The receipt's total must be the sum of its charges and the request's latest charge. */
function checkTotal(
  receipt: ChargeReceipt,
  earlier: readonly { eventId: string; data: ChargeData }[],
  lastData: ChargeData | undefined,
  failures: string[],
): void {
  try {
    const charged = earlier.reduce(
      (sum, previous) => sum.plus(decimal(previous.data.amountWon, "amountWon")),
      new Money(0),
    );
    if (earlier.length > 0 && !charged.equals(decimal(receipt.amountWon, "amountWon")))
      failures.push(
        `amount: the receipt's charges sum to ${charged.toFixed(6)}, not its total ${receipt.amountWon}`,
      );
  } catch (error) {
    failures.push(`amount: ${(error as Error).message}`);
  }
  if (lastData && receipt.amountWon !== lastData.breakdown?.amountWon)
    failures.push(
      `amount: the receipt's total ${receipt.amountWon} is not the request's charge ${lastData.breakdown?.amountWon}`,
    );
}
