#!/usr/bin/env node
/**
 * Stand-alone verifier of a won-gateway charge receipt ("won-ledger-receipt/1"). It needs Node 20 and nothing
 * else: no package, no network, no access to the gateway or its database. Copy this one file anywhere.
 *
 *   node verify-receipt.mjs <receipt.json> <public-key.pem>
 *
 * <public-key.pem> is the ledger's checkpoint signing key as published at GET /ledger/public-key. Prints
 * `valid` and exits 0 only when every check passes; otherwise prints one line per failed check, each
 * starting with the check's name, and exits 1 (2 for bad usage or unreadable files).
 *
 * What it checks, for each charge event in the receipt (docs/statements-and-receipts.md):
 * - request:   the event is a charge of the receipt's request, on the request's usage stream;
 * - chain:     the event's chain hash recomputes from its own bytes and the hash it chains to;
 * - not-sealed: the event is sealed by a checkpoint (a receipt made too early says when it will be);
 * - inclusion: the RFC 6962 inclusion path leads from the chain hash to the checkpoint's events root;
 * - checkpoint: the checkpoint's hash recomputes from its fields;
 * - signature: the checkpoint hash is signed by the published key (Ed25519);
 * - amount:    the amount follows from the breakdown (tokens, unit prices, FX rate, discount; C7: exact,
 *              rounded once half-up to micro-won); a correction's (a late settlement, C10) is its breakdown's
 *              less the earlier charge it corrects; the charges sum to the receipt's total.
 * The same checks as `npm run ledger -- verify-receipt`, re-implemented here with node:crypto only.
 */
import { createHash, createPublicKey, verify } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

export const receiptFormat = "won-ledger-receipt/1";
const chargeTypes = new Set(["UsageCharged"]);

// ---- bytes and hashes (the ledger's definitions: event-hash.ts, merkle-tree.ts, ledger-checkpoint.ts) ----

function sha256(...parts) {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
}

function int32(value) {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(value);
  return bytes;
}

function text(value) {
  const bytes = Buffer.from(value, "utf8");
  return Buffer.concat([int32(bytes.length), bytes]);
}

function hex(value, bytes, name) {
  if (typeof value !== "string" || !new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(value))
    throw new Error(`${name} is not ${bytes} bytes of hex`);
  return Buffer.from(value, "hex");
}

/** SHA-256 over previous hash, stream id, version, event id, type, schema version, data, metadata. */
export function eventChainHash(previousHash, event) {
  const schemaVersion = Buffer.alloc(2);
  schemaVersion.writeInt16BE(event.schemaVersion);
  const eventId = event.eventId.replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(eventId)) throw new Error("event id is not a uuid");
  return sha256(
    previousHash,
    text(event.streamId),
    int32(event.streamVersion),
    Buffer.from(eventId, "hex"),
    text(event.type),
    schemaVersion,
    text(event.data),
    text(event.metadata),
  );
}

const leafHash = (leaf) => sha256(Buffer.from([0]), leaf);
const nodeHash = (left, right) => sha256(Buffer.from([1]), left, right);

/** RFC 9162 §2.1.3.2: the root an inclusion path leads to, or undefined when the path cannot be one. */
export function rootFromInclusionPath(leaf, index, count, path) {
  if (!Number.isInteger(index) || !Number.isInteger(count) || index < 0 || index >= count) return undefined;
  let fn = index;
  let sn = count - 1;
  let root = leafHash(leaf);
  for (const sibling of path) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      root = nodeHash(sibling, root);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      root = nodeHash(root, sibling);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 ? root : undefined;
}

export function checkpointHashOf(checkpoint) {
  const match = /^(-?\d+)-(-?\d+)$/.exec(checkpoint.last);
  if (!match) throw new Error("checkpoint.last is not a log position");
  const fixed = Buffer.alloc(28);
  fixed.writeBigInt64BE(BigInt(checkpoint.sequence), 0);
  fixed.writeBigInt64BE(BigInt(match[1]), 8);
  fixed.writeBigInt64BE(BigInt(match[2]), 16);
  fixed.writeInt32BE(checkpoint.eventCount, 24);
  const sealedAtMs = Date.parse(checkpoint.sealedAt);
  if (Number.isNaN(sealedAtMs)) throw new Error("checkpoint.sealedAt is not an instant");
  const sealedAt = Buffer.alloc(8);
  sealedAt.writeBigInt64BE(BigInt(sealedAtMs));
  return sha256(
    Buffer.from("won-ledger-checkpoint/1", "utf8"),
    fixed,
    hex(checkpoint.eventsRoot, 32, "checkpoint.eventsRoot"),
    hex(checkpoint.previousCheckpointHash, 32, "checkpoint.previousCheckpointHash"),
    sealedAt,
  );
}

// ---- exact decimals (BigInt units and a scale: no float ever holds money) ----

function decimal(value, name) {
  const match = typeof value === "string" ? /^(-?)(0|[1-9]\d*)(?:\.(\d+))?$/.exec(value) : null;
  if (!match) throw new Error(`${name} is not a decimal string`);
  const fraction = match[3] ?? "";
  const units = BigInt(match[2] + fraction);
  return { units: match[1] === "-" ? -units : units, scale: fraction.length };
}

const integer = (value) => ({ units: BigInt(value), scale: 0 });
const times = (left, right) => ({ units: left.units * right.units, scale: left.scale + right.scale });

function aligned(left, right) {
  const scale = Math.max(left.scale, right.scale);
  return [
    left.units * 10n ** BigInt(scale - left.scale),
    right.units * 10n ** BigInt(scale - right.scale),
    scale,
  ];
}

function plus(left, right) {
  const [a, b, scale] = aligned(left, right);
  return { units: a + b, scale };
}

const minus = (left, right) => plus(left, { units: -right.units, scale: right.scale });

function equal(left, right) {
  const [a, b] = aligned(left, right);
  return a === b;
}

/** Half-up (away from zero at the half), as decimal.js ROUND_HALF_UP. */
function roundHalfUp(value, places) {
  if (value.scale <= places)
    return { units: value.units * 10n ** BigInt(places - value.scale), scale: places };
  const divisor = 10n ** BigInt(value.scale - places);
  const magnitude = value.units < 0n ? -value.units : value.units;
  let rounded = magnitude / divisor;
  if ((magnitude % divisor) * 2n >= divisor) rounded += 1n;
  return { units: value.units < 0n ? -rounded : rounded, scale: places };
}

function format(value) {
  const negative = value.units < 0n;
  const digits = (negative ? -value.units : value.units).toString().padStart(value.scale + 1, "0");
  const whole = digits.slice(0, digits.length - value.scale);
  const fraction = digits.slice(digits.length - value.scale);
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** Plain notation without trailing zeros ("0.0012"), as decimal.js prints. */
function formatTrimmed(value) {
  const fixed = format(value);
  return fixed.includes(".") ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
}

/** C7: usd = ((input − cached) × in + cached × cachedIn + output × out) / 1e6; won = usd × fx × (1 − discount). */
export function chargeOfBreakdown(breakdown) {
  const tokens = breakdown.tokens;
  for (const name of ["input", "output"])
    if (!Number.isSafeInteger(tokens?.[name]) || tokens[name] < 0)
      throw new Error(`tokens.${name} is not a count`);
  const cached = tokens.cached ?? 0;
  if (!Number.isSafeInteger(cached) || cached < 0 || cached > tokens.input)
    throw new Error("tokens.cached is not a count within input");
  const usdTimesMillion = plus(
    plus(
      times(
        integer(tokens.input - cached),
        decimal(breakdown.inputUsdPerMillionTokens, "inputUsdPerMillionTokens"),
      ),
      times(
        integer(cached),
        decimal(breakdown.cachedInputUsdPerMillionTokens, "cachedInputUsdPerMillionTokens"),
      ),
    ),
    times(integer(tokens.output), decimal(breakdown.outputUsdPerMillionTokens, "outputUsdPerMillionTokens")),
  );
  const usd = { units: usdTimesMillion.units, scale: usdTimesMillion.scale + 6 };
  const exactWon = times(
    times(usd, decimal(breakdown.fxRateKrwPerUsd, "fxRateKrwPerUsd")),
    minus(integer(1), decimal(breakdown.discountRate, "discountRate")),
  );
  return { usd, won: roundHalfUp(exactWon, 6) };
}

// ---- the checks ----

/**
 * A first charge is its breakdown's amount; a correction's (C10) is the breakdown's (the delivered usage's
 * whole charge) less the charge it corrects, which must be an earlier charge of the same receipt.
 */
function checkAmount(charge, data, earlier, failures, label) {
  try {
    const { usd, won } = chargeOfBreakdown(data.breakdown);
    if (!equal(usd, decimal(data.breakdown.usd, "breakdown.usd")))
      failures.push(
        `amount: ${label}: breakdown.usd ${data.breakdown.usd} is not ${formatTrimmed(usd)}, what its tokens and prices give`,
      );
    if (!equal(won, decimal(data.breakdown.amountWon, "breakdown.amountWon")))
      failures.push(
        `amount: ${label}: breakdown.amountWon ${data.breakdown.amountWon} is not ${format(won)}, what the breakdown gives`,
      );
    const breakdownWon = decimal(data.breakdown.amountWon, "breakdown.amountWon");
    const correction = data.correction ?? null;
    if (correction === null) {
      if (!equal(decimal(data.amountWon, "amountWon"), breakdownWon))
        failures.push(
          `amount: ${label}: charged ${data.amountWon}, not the breakdown's ${data.breakdown.amountWon}`,
        );
    } else {
      const correctedWon = decimal(correction.correctedAmountWon, "correction.correctedAmountWon");
      if (!equal(decimal(data.amountWon, "amountWon"), minus(breakdownWon, correctedWon)))
        failures.push(
          `amount: ${label}: charged ${data.amountWon}, not the breakdown's ${data.breakdown.amountWon} less the corrected ${correction.correctedAmountWon}`,
        );
      const corrected = earlier.find((previous) => previous.eventId === correction.correctsEventId);
      if (
        !corrected ||
        !equal(decimal(corrected.data.breakdown.amountWon, "breakdown.amountWon"), correctedWon)
      )
        failures.push(
          `amount: ${label}: corrects no earlier charge of ${correction.correctedAmountWon} in this receipt`,
        );
    }
    if (charge.amountWon !== data.amountWon)
      failures.push(
        `amount: ${label}: the receipt shows ${charge.amountWon}, the event says ${data.amountWon}`,
      );
  } catch (error) {
    failures.push(`amount: ${label}: ${error.message}`);
  }
}

/** Every failed check of `receipt` under `publicKeyPem`, each "name: why"; empty when it is valid. */
export function receiptFailures(receipt, publicKeyPem) {
  if (receipt?.format !== receiptFormat) return [`format: not a ${receiptFormat} receipt`];
  if (!Array.isArray(receipt.charges) || receipt.charges.length === 0)
    return ["format: the receipt holds no charge"];
  const { publicKey, keyFailure } = ed25519PublicKeyOf(publicKeyPem);
  if (keyFailure) return [keyFailure];
  const failures = [];
  const earlier = [];
  let lastData;
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
    checkSeal(charge, chainHash, publicKey, failures, label);
  });
  checkTotal(receipt, earlier, lastData, failures);
  return failures;
}

/** `{ publicKey }` from the PEM, or `{ keyFailure }` when it is not an Ed25519 public key. */
function ed25519PublicKeyOf(publicKeyPem) {
  try {
    const publicKey = createPublicKey(publicKeyPem);
    if (publicKey.asymmetricKeyType !== "ed25519")
      return { keyFailure: "signature: the public key is not an Ed25519 key" };
    return { publicKey };
  } catch {
    return { keyFailure: "signature: the public key is not a PEM public key" };
  }
}

/** The event's data, or undefined (and a failure) when its data or metadata is not JSON, or its data no object. */
function parseChargeData(charge, failures, label) {
  let data;
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
  const breakdown = data.breakdown;
  if (breakdown === null || typeof breakdown !== "object" || Array.isArray(breakdown)) {
    failures.push(`format: ${label}: the event's data has no breakdown object`);
    return undefined;
  }
  return data;
}

/**
 * What the receipt shows beside the sealed events, for people to read — each charge's type, amount and
 * breakdown, and the request's account, key, model, endpoint and start (from its first charge) — must be
 * what the events say: a copy altered would show a reader figures the ledger never held.
 */
function checkCopies(receipt, charge, data, first, failures, label) {
  const differing = [
    ...(charge.type === charge.event.type ? [] : ["type"]),
    ...(sameJson(charge.breakdown, data.breakdown) ? [] : ["breakdown"]),
  ];
  if (first)
    for (const field of ["account", "keyId", "model", "endpoint", "startedAt"])
      if (!sameJson(receipt[field], data[field])) differing.push(field);
  if (differing.length > 0)
    failures.push(`copies: ${label}: the receipt's ${differing.join(", ")} differ from what the event says`);
}

/** Equal as JSON values, whatever the order of their keys. */
function sameJson(one, other) {
  return JSON.stringify(sortedKeys(one)) === JSON.stringify(sortedKeys(other));
}

function sortedKeys(value) {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([one], [other]) => (one < other ? -1 : one > other ? 1 : 0))
      .map(([key, entry]) => [key, sortedKeys(entry)]),
  );
}

/** A receipt's charges must all be charge events of its own request, on that request's usage stream. */
function checkRequest(receipt, charge, data, failures, label) {
  if (
    !chargeTypes.has(charge.event.type) ||
    data.requestId !== receipt.requestId ||
    charge.event.streamId !== `usage-${receipt.requestId}`
  )
    failures.push(`request: ${label}: not a charge of request ${receipt.requestId}`);
}

/** The event's bytes rehashed onto the previous hash; answers the chain hash for the inclusion check. */
function checkChain(charge, failures, label) {
  let chainHash;
  try {
    chainHash = hex(charge.chainHash, 32, "chainHash");
    const recomputed = eventChainHash(hex(charge.previousHash, 32, "previousHash"), charge.event);
    if (!recomputed.equals(chainHash))
      failures.push(
        `chain: ${label}: the event's bytes do not hash to its chain hash (the event was altered)`,
      );
  } catch (error) {
    failures.push(`chain: ${label}: ${error.message}`);
  }
  return chainHash;
}

/** The charge's seal: its inclusion in a checkpoint, the checkpoint's hash, and the checkpoint's signature. */
function checkSeal(charge, chainHash, publicKey, failures, label) {
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
    const root = chainHash && rootFromInclusionPath(chainHash, seal.leafIndex, checkpoint.eventCount, path);
    if (!root?.equals(hex(checkpoint.eventsRoot, 32, "eventsRoot")))
      failures.push(
        `inclusion: ${label}: the inclusion path does not lead to checkpoint #${checkpoint.sequence}'s events root`,
      );
    const checkpointHash = checkpointHashOf(checkpoint);
    if (!checkpointHash.equals(hex(checkpoint.checkpointHash, 32, "checkpointHash")))
      failures.push(
        `checkpoint: ${label}: checkpoint #${checkpoint.sequence}'s hash does not recompute from its fields`,
      );
    if (!verify(null, checkpointHash, publicKey, hex(checkpoint.signature, 64, "signature")))
      failures.push(
        `signature: ${label}: checkpoint #${checkpoint.sequence} is not signed by the published key`,
      );
  } catch (error) {
    failures.push(`checkpoint: ${label}: ${error.message}`);
  }
}

/** A seal's fields of the wrong kind, named before any is used (as receipt-verification.ts names them). */
function assertWellFormedSeal(seal) {
  const checkpoint = seal.checkpoint;
  if (checkpoint === null || typeof checkpoint !== "object") throw new Error("checkpoint is not an object");
  if (!Array.isArray(seal.inclusionPath)) throw new Error("inclusionPath is not a list of hashes");
  if (!Number.isSafeInteger(checkpoint.sequence) || checkpoint.sequence < 1)
    throw new Error("checkpoint.sequence is not a sequence number");
  if (
    !Number.isSafeInteger(checkpoint.eventCount) ||
    checkpoint.eventCount < 1 ||
    checkpoint.eventCount > 2 ** 31 - 1
  )
    throw new Error("checkpoint.eventCount is not a count of events");
  if (typeof checkpoint.last !== "string" || !/^(-?\d+)-(-?\d+)$/.test(checkpoint.last))
    throw new Error("checkpoint.last is not a log position");
  if (typeof checkpoint.sealedAt !== "string" || Number.isNaN(Date.parse(checkpoint.sealedAt)))
    throw new Error("checkpoint.sealedAt is not an instant");
}

/** The receipt's total must be the sum of its charges and the request's latest charge. */
function checkTotal(receipt, earlier, lastData, failures) {
  try {
    const charged = earlier.reduce(
      (sum, previous) => plus(sum, decimal(previous.data.amountWon, "amountWon")),
      integer(0),
    );
    if (earlier.length > 0 && !equal(charged, decimal(receipt.amountWon, "amountWon")))
      failures.push(
        `amount: the receipt's charges sum to ${format(charged)}, not its total ${receipt.amountWon}`,
      );
  } catch (error) {
    failures.push(`amount: ${error.message}`);
  }
  if (lastData && receipt.amountWon !== lastData.breakdown?.amountWon)
    failures.push(
      `amount: the receipt's total ${receipt.amountWon} is not the request's charge ${lastData.breakdown?.amountWon}`,
    );
}

/**
 * A file's failures: a receipt's own, or, for the list answered for a body id several of the caller's
 * requests share (`{ "object": "list", "data": [receipt, …] }`), each receipt's, named by its place.
 */
function receiptFileFailures(document, receiptFailuresOf) {
  if (document?.object !== "list") return receiptFailuresOf(document);
  if (!Array.isArray(document.data) || document.data.length === 0)
    return ["format: the list holds no receipt"];
  return document.data.flatMap((receipt, index) =>
    receiptFailuresOf(receipt).map(
      (failure) => `receipt ${index + 1} of ${document.data.length}: ${failure}`,
    ),
  );
}

/** As receiptFileFailures, of the file's text: a file cut short or not JSON is a format failure, in one line. */
export function receiptTextFailures(text, receiptFailuresOf) {
  let document;
  try {
    document = JSON.parse(text);
  } catch {
    return ["format: the file is not JSON"];
  }
  return receiptFileFailures(document, receiptFailuresOf);
}

function main(argv) {
  if (argv.length !== 2) {
    process.stderr.write("usage: node verify-receipt.mjs <receipt.json> <public-key.pem>\n");
    return 2;
  }
  let text;
  let publicKeyPem;
  try {
    text = readFileSync(argv[0], "utf8");
    publicKeyPem = readFileSync(argv[1], "utf8");
  } catch (error) {
    process.stderr.write(`verify-receipt: ${error.message}\n`);
    return 2;
  }
  const failures = receiptTextFailures(text, (each) => receiptFailures(each, publicKeyPem));
  process.stdout.write(failures.length === 0 ? "valid\n" : `${failures.join("\n")}\n`);
  return failures.length === 0 ? 0 : 1;
}

// Run as a script (not imported): check the files named on the command line.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href)
  process.exitCode = main(process.argv.slice(2));
