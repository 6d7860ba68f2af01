import { readFile } from "node:fs/promises";
import { SingleBar } from "cli-progress";
import { allProjections } from "../projections";
import {
  receiptFailures,
  receiptFailuresUnderPem,
  receiptTextFailures,
} from "./billing/receipts/receipt-verification";
import { loadLedgerCommandConfig } from "./config";
import { loadLocalSecrets, localDataDirectory, startLocalDatabase } from "./database/local-data";
import { ConfigError } from "./kernel/config-error";
import { counted } from "./kernel/counted";
import { limits } from "./kernel/limits";
import type { BrokenChains } from "./ledger/integrity/broken-chain-links";
import { isProven, proveEvent } from "./ledger/integrity/event-proof";
import type { LedgerCheckpoint } from "./ledger/integrity/ledger-checkpoint";
import { verifyIntegrity } from "./ledger/integrity/ledger-integrity";
import type { LedgerSigningKey } from "./ledger/integrity/ledger-signing-key";
import { existingLedgerSigningKeyOf } from "./ledger/integrity/ledger-signing-key-setting";
import { readLedgerStatus } from "./ledger/integrity/ledger-status";
import {
  parsePublishedCheckpoint,
  publishedCheckpointProblems,
} from "./ledger/integrity/published-checkpoint";
import { BrokenChainsError, balanceChecksum, rebuildProjections } from "./ledger/ledger-maintenance";
import { projectionsNotPrepared } from "./ledger/projection/projections-prepared";
import { describeDifference, differenceCount } from "./ledger/rebuild/projection-differences";
import { eventIdAt } from "./ledger/store/event-log-browser";
import { type LogPosition, parseLogPosition } from "./ledger/store/log-position";
import { LedgerSchemaError, openLedger } from "./ledger/store/open-ledger";
import { verifyProjections } from "./ledger/verify-projections";

/**
 * `npm run ledger -- rebuild [--despite-broken-chains]`: drop and rebuild every projection from the log, print
 *   the balance checksum; refused (exit 1, nothing changed) where an event breaks its stream's hash chain,
 *   unless told to fold the log as it stands.
 * `npm run ledger -- verify [--against <checkpoint file>]`: check every hash chain and checkpoint, fold the log
 *   afresh and compare with the live projections; exit 1 on any broken link or difference. Given a checkpoint
 *   published earlier, also that the ledger still holds it, unchanged.
 * `npm run ledger -- checkpoint`: print the latest signed checkpoint once its hash, chain and signature hold.
 * `npm run ledger -- prove <event id | position>`: print what links that event to a signed checkpoint; the
 *   event is named by its id or by its log position ("1234-56"), as the console's event log shows either.
 * `npm run ledger -- verify-receipt <file> [--public-key <pem file>]`: check a charge receipt, or the list of
 * them a shared body id answers, offline against the given public key, else this deployment's signing key
 * (LEDGER_SIGNING_KEY, or ./.data/'s as `verify` finds it); prints `valid` or every failed check.
 */

const usage =
  "usage: npm run ledger -- rebuild [--despite-broken-chains] | verify [--against <checkpoint file>] | checkpoint | prove <event id | position> | verify-receipt <file> [--public-key <pem file>]";
const commands = ["rebuild", "verify", "checkpoint", "prove", "verify-receipt"] as const;
type Command = (typeof commands)[number];

function isCommand(text: string | undefined): text is Command {
  return (commands as readonly (string | undefined)[]).includes(text);
}

function argumentsFit(command: Command, rest: readonly string[]): boolean {
  if (command === "prove") return rest.length === 1;
  if (command === "verify") return rest.length === 0 || (rest.length === 2 && rest[0] === "--against");
  if (command === "rebuild")
    return rest.length === 0 || (rest.length === 1 && rest[0] === "--despite-broken-chains");
  return rest.length === 0;
}

async function main(argv: readonly string[]): Promise<number> {
  const command = argv[0];
  if (command === "verify-receipt") return await verifyReceiptFile(argv.slice(1));
  if (!isCommand(command) || !argumentsFit(command, argv.slice(1))) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const config = loadLedgerCommandConfig();
  // Checkpoints and proofs are read from PostgreSQL's tables: with the log in EventStoreDB they would answer
  // for another log (PostgreSQL's own, if it has one) as if for this one.
  if (config.eventStoreUrl && (command === "checkpoint" || command === "prove")) {
    process.stderr.write(
      `ledger: ${command} answers for the PostgreSQL event store only: EventStoreDB's log (EVENTSTORE_URL) is neither chained into checkpoints nor sealed; this command changes nothing\n`,
    );
    return 2;
  }
  // Without DATABASE_URL, the embedded setup's database, if this checkout has one: a check never creates it
  // (a first `npm start` would then find a setup already there, and not print its admin token and demo key).
  const localSecrets = config.databaseUrl ? undefined : await loadLocalSecrets();
  if (!config.databaseUrl && !localSecrets) {
    process.stderr.write(
      `ledger: no DATABASE_URL, and no embedded setup in ${localDataDirectory} to read: set DATABASE_URL, or start the service here first (npm start); this command changes nothing\n`,
    );
    return 2;
  }
  // The key that sealed the checkpoints, if any: a check never generates one (a new key has signed nothing).
  const signingKey = await existingLedgerSigningKeyOf(config);
  const published =
    command === "verify" && argv[2] ? await readPublishedCheckpoint(argv[2], signingKey) : undefined;
  if (published === "refused") return 2;
  const localDatabase = localSecrets ? await startLocalDatabase(localSecrets.postgresPassword) : undefined;
  let ledger: Awaited<ReturnType<typeof openLedger>> | undefined;
  try {
    ledger = await openLedger({
      databaseUrl: config.databaseUrl ?? localDatabase!.url,
      eventStoreUrl: config.eventStoreUrl,
      applicationName: `ledger-${command}`,
      connectionsMax: limits.ledgerCliDatabaseConnectionsMax,
      // A check run against the wrong database (an empty one, an older release's) must say so, not make it
      // a ledger, nor migrate a deployment's schema underneath its gateways.
      schema: "as-found",
    });
    const context = { pool: ledger.pool, store: ledger.store, projections: allProjections };
    switch (command) {
      case "rebuild":
        return await rebuild(context, argv[1] === "--despite-broken-chains" ? "fold" : "refuse");
      case "verify":
        return await verify(context, signingKey, published);
      case "checkpoint":
        return await printLatestCheckpoint(context, signingKey?.publicKey);
      case "prove":
        return await prove(context, argv[1]!, signingKey?.publicKey);
      case "verify-receipt":
        throw new Error("verify-receipt needs no database and is answered before one is opened");
      default: {
        const unreachable: never = command;
        return unreachable;
      }
    }
  } finally {
    // The embedded database stops with the command, whether or not the ledger opened.
    await ledger?.close();
    await localDatabase?.stop();
  }
}

async function rebuild(
  context: Parameters<typeof rebuildProjections>[0],
  brokenChains: "refuse" | "fold",
): Promise<number> {
  const total = await countEvents(context);
  const bar = new SingleBar({
    format: "rebuilding projections [{bar}] {percentage}% | {value}/{total} events | {eta_formatted} left",
    stream: process.stdout,
    hideCursor: true,
  });
  bar.start(total ?? 0, 0);
  const startedAt = performance.now();
  let result: Awaited<ReturnType<typeof rebuildProjections>>;
  try {
    result = await rebuildProjections(context, {
      batchSizeMax: limits.rebuildBatchSizeMax,
      brokenChains,
      onProgress: (applied) => {
        if (total === undefined || applied > total) bar.setTotal(applied);
        bar.update(applied);
      },
    });
  } catch (error) {
    if (!(error instanceof BrokenChainsError)) throw error;
    bar.stop();
    printBrokenChains(error.chains);
    process.stdout.write(
      `rebuild: refused, the projections are as they were: the hash chains of ${counted(error.chains.brokenCount, "stream")} do not hold (events altered or removed since written); npm run ledger -- verify names every broken link and checkpoint; to fold the log as it stands all the same: npm run ledger -- rebuild --despite-broken-chains\n`,
    );
    return 1;
  }
  bar.stop();
  if (result.brokenChains) {
    printBrokenChains(result.brokenChains);
    process.stdout.write(
      `rebuild: folded as it stands, as told: the hash chains of ${counted(result.brokenChains.brokenCount, "stream")} do not hold\n`,
    );
  }
  const seconds = (performance.now() - startedAt) / 1_000;
  const rate = Math.round(result.eventCount / Math.max(seconds, 0.001));
  process.stdout.write(
    `rebuilt ${counted(allProjections.length, "projection")} from ${counted(result.eventCount, "event")} in ${seconds.toFixed(1)} s (${rate} events/s, folded ${result.fold === "sql" ? "in SQL" : "in memory"})\n` +
      `balances checksum: ${result.checksum.sha256} (${counted(result.checksum.accountCount, "account")}, total ₩${result.checksum.totalWon})\n`,
  );
  return 0;
}

function printBrokenChains(chains: BrokenChains): void {
  for (const link of chains.first) process.stdout.write(`broken link: ${link}\n`);
  if (chains.brokenCount > chains.first.length)
    process.stdout.write(
      `broken link: … and in ${chains.brokenCount - chains.first.length} more stream(s)\n`,
    );
}

async function verify(
  context: Parameters<typeof verifyProjections>[0],
  signingKey: LedgerSigningKey | undefined,
  published: LedgerCheckpoint | undefined,
): Promise<number> {
  // Projections an earlier release folded (a worker of this one has not led yet) are not this fold's to
  // compare: say so, as for a schema of another release.
  const unprepared = await projectionsNotPrepared(context.pool, context.projections);
  const newer = unprepared.filter((projection) => (projection.folded ?? 0) > projection.known);
  if (newer.length > 0)
    throw new LedgerSchemaError(
      `the projections ${newer.map((projection) => projection.name).join(", ")} are folded by a newer release's definitions: verify with that release, or, to go back to this one, rebuild them with it (npm run ledger -- rebuild); this command changes nothing`,
    );
  if (unprepared.length > 0)
    throw new LedgerSchemaError(
      `the projections ${unprepared.map((projection) => projection.name).join(", ")} are not folded by this release's definitions: start this release's worker on the database first (it refolds them); this command changes nothing`,
    );
  if (published && context.store.kind !== "postgresql") {
    process.stderr.write(
      "verify: --against compares checkpoints, which are sealed on the PostgreSQL store only; this command changes nothing\n",
    );
    return 2;
  }
  if (context.store.kind !== "postgresql")
    process.stdout.write(
      "verify: the EventStoreDB log's hash chains and checkpoints are not checked (that is done on the PostgreSQL store only); only the projections are compared with it\n",
    );
  const integrity =
    context.store.kind === "postgresql"
      ? await verifyIntegrity(context.pool, signingKey?.publicKey)
      : undefined;
  if (integrity && published) {
    const differing = await publishedCheckpointProblems(context.pool, published);
    integrity.problems.push(...differing);
    integrity.problemCount += differing.length;
    if (integrity.problemCount === 0)
      process.stdout.write(
        `verify: the ledger holds published checkpoint #${published.sequence}, unchanged\n`,
      );
  }
  if (integrity) {
    for (const problem of integrity.problems) process.stdout.write(`broken link: ${problem}\n`);
    if (!integrity.signaturesChecked)
      process.stdout.write("verify: no LEDGER_SIGNING_KEY, checkpoint signatures not checked\n");
    process.stdout.write(
      `verify: ${counted(integrity.eventCount, "event")} in ${counted(integrity.streamCount, "stream")}, ${counted(integrity.checkpointCount, "checkpoint")}, ${counted(integrity.unsealedEventCount, "event")} not sealed yet\n`,
    );
  }
  const differences = await projectionDifferencesOf(context, integrity?.problemCount ?? 0);
  if (differences === "unreadable") return 1;
  for (const difference of differences) process.stdout.write(`${describeDifference(difference)}\n`);
  if (differences.length > 0)
    process.stdout.write(
      `verify: ${counted(differenceCount(differences), "difference")} between the log and the projections\n`,
    );
  if (integrity && integrity.problemCount > 0)
    process.stdout.write(
      `verify: ${counted(integrity.problemCount, "broken link")} in the ledger's hash chains and checkpoints${
        integrity.problemCount > integrity.problems.length
          ? ` (the first ${integrity.problems.length} named)`
          : ""
      }\n`,
    );
  if (differences.length > 0 || (integrity?.problemCount ?? 0) > 0) return 1;
  const checksum = await balanceChecksum(context.pool);
  process.stdout.write(
    `verify: projections match the log\nbalances checksum: ${checksum.sha256} (${counted(checksum.accountCount, "account")}, total ₩${checksum.totalWon})\n`,
  );
  return 0;
}

/**
 * The projections' differences from a fresh fold of the log. A log the integrity pass found tampered may hold
 * an event no fold can read (an amount that is no number, a version no release wrote): the fold's refusal is
 * then part of that finding, said with it (exit 1), not a check that could not run.
 */
async function projectionDifferencesOf(
  context: Parameters<typeof verifyProjections>[0],
  brokenLinkCount: number,
): Promise<Awaited<ReturnType<typeof verifyProjections>> | "unreadable"> {
  try {
    return await verifyProjections(context);
  } catch (error) {
    if (brokenLinkCount === 0) throw error;
    process.stdout.write(
      `verify: the projections were not compared: the log does not fold (${(error as Error).message}), as the tampering above may cause\n` +
        `verify: ${counted(brokenLinkCount, "broken link")} in the ledger's hash chains and checkpoints\n`,
    );
    return "unreadable";
  }
}

/** The checkpoint file `verify --against` names, or "refused" once said why on stderr (exit 2). */
async function readPublishedCheckpoint(
  file: string,
  signingKey: LedgerSigningKey | undefined,
): Promise<LedgerCheckpoint | "refused"> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    process.stderr.write(
      `verify: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}\n`,
    );
    return "refused";
  }
  const parsed = parsePublishedCheckpoint(text, signingKey?.publicKey);
  if ("refusal" in parsed) {
    process.stderr.write(`verify: ${file}: ${parsed.refusal}; this command changes nothing\n`);
    return "refused";
  }
  if (!signingKey) process.stderr.write(`verify: no LEDGER_SIGNING_KEY, ${file}'s signature not checked\n`);
  return parsed.checkpoint;
}

/**
 * What operators publish: the latest checkpoint, printed (stdout, JSON alone) only once it holds as `verify`
 * holds it — its fields hash to its hash, it chains to the previous one, and under the configured key its
 * signature is valid and its stored public key is that key. Else 1, each mismatch named on stderr, nothing
 * on stdout to publish; 3 while nothing is sealed yet (ask again after the first checkpoint), as `prove`.
 */
async function printLatestCheckpoint(
  context: Parameters<typeof verifyProjections>[0],
  trustedPublicKey: Buffer | undefined,
): Promise<number> {
  const { latest } = await readLedgerStatus(context.pool, trustedPublicKey);
  if (!latest) {
    process.stderr.write("no checkpoint yet: ask again after the first one is sealed\n");
    return 3;
  }
  const name = `checkpoint #${latest.checkpoint.sequence}`;
  const broken = [
    latest.hashMatches ? undefined : `${name}: hash does not match its fields`,
    latest.chainsToPrevious
      ? undefined
      : `${name}: does not chain to checkpoint #${latest.checkpoint.sequence - 1} (previous hash differs)`,
    latest.signatureValid === false
      ? `${name}: signature is not valid under the ledger signing key (forged or altered)`
      : undefined,
    trustedPublicKey === undefined || latest.checkpoint.publicKey === trustedPublicKey.toString("hex")
      ? undefined
      : `${name}: its public key ${latest.checkpoint.publicKey} is not the ledger signing key's ${trustedPublicKey.toString("hex")}`,
  ].filter((said) => said !== undefined);
  for (const said of broken) process.stderr.write(`${said}\n`);
  if (broken.length > 0) return 1;
  if (trustedPublicKey === undefined)
    process.stderr.write("checkpoint: no LEDGER_SIGNING_KEY, its signature not checked\n");
  process.stdout.write(`${JSON.stringify(latest.checkpoint, null, 2)}\n`);
  return 0;
}

/**
 * Exit codes a script can act on: 0 proven; 1 a link does not hold (the event altered, the path not leading
 * to the root, the checkpoint's hash or signature forged: tampering); 2 bad usage; 3 not sealed yet (ask again
 * after the next checkpoint); 4 no such event. Stdout is the proof as JSON alone; what is said about it goes
 * to stderr.
 */
async function prove(
  context: Parameters<typeof verifyProjections>[0],
  named: string,
  trustedPublicKey: Buffer | undefined,
): Promise<number> {
  const eventId = await eventIdNamedBy(context, named);
  if (typeof eventId === "object") {
    process.stderr.write(`${eventId.malformed}\n`);
    return 2;
  }
  const proof = eventId === undefined ? undefined : await proveEvent(context.pool, eventId, trustedPublicKey);
  if (eventId === undefined || !proof) {
    process.stderr.write(`no event ${eventId === undefined ? `at ${named}` : eventId}\n`);
    return 4;
  }
  process.stdout.write(`${JSON.stringify(proof, null, 2)}\n`);
  if (proof.rangeBroken) {
    process.stderr.write(
      `event ${eventId}: ${proof.rangeBroken.problem}: its checkpoint's range no longer matches (tampering)\n`,
    );
    return 1;
  }
  if (!proof.checkpoint) {
    process.stderr.write(`event ${eventId} is not sealed by a checkpoint yet\n`);
    return 3;
  }
  const { checkpoint } = proof;
  const broken = [
    proof.event.hashMatches ? undefined : "its bytes do not hash to its chain hash (altered)",
    checkpoint.rootMatches ? undefined : "its inclusion path does not lead to the checkpoint's root",
    checkpoint.hashMatches
      ? undefined
      : `checkpoint #${checkpoint.sequence}'s fields do not hash to its hash`,
    checkpoint.signatureValid === false
      ? `checkpoint #${checkpoint.sequence}'s signature is not valid under the ledger signing key (forged)`
      : undefined,
  ].filter((said) => said !== undefined);
  for (const said of broken) process.stderr.write(`event ${eventId}: ${said}\n`);
  if (checkpoint.signatureValid === null)
    process.stderr.write(
      "no ledger signing key to check the checkpoint's signature with (set LEDGER_SIGNING_KEY)\n",
    );
  return isProven(proof) ? 0 : 1;
}

/** Offline: reads the receipt and the trusted key from files (or the configured key), never the database. */
async function verifyReceiptFile(argv: readonly string[]): Promise<number> {
  const keyFlag = argv.indexOf("--public-key");
  const keyFile = keyFlag >= 0 ? argv[keyFlag + 1] : undefined;
  const files = argv.filter((_, index) => keyFlag < 0 || (index !== keyFlag && index !== keyFlag + 1));
  if (files.length !== 1 || (keyFlag >= 0 && keyFile === undefined)) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const text = await readFile(files[0]!, "utf8");
  // A key file given is judged as verify-receipt.mjs judges it: one that is no Ed25519 public key is a
  // verdict (1), in the script's words, not a check that could not run.
  if (keyFile !== undefined) {
    const pem = await readFile(keyFile, "utf8");
    return printReceiptVerdict(receiptTextFailures(text, (receipt) => receiptFailuresUnderPem(receipt, pem)));
  }
  // Only a key configured or already kept in ./.data/ is trusted: this never generates one.
  const trustedKey = (await existingLedgerSigningKeyOf(loadLedgerCommandConfig()))?.publicKey;
  if (trustedKey === undefined) {
    process.stderr.write(
      "verify-receipt: give --public-key (the PEM from GET /ledger/public-key), set LEDGER_SIGNING_KEY, or run it " +
        "where the embedded setup keeps its key (./.data/, without DATABASE_URL)\n",
    );
    return 2;
  }
  return printReceiptVerdict(receiptTextFailures(text, (receipt) => receiptFailures(receipt, trustedKey)));
}

function printReceiptVerdict(failures: readonly string[]): number {
  process.stdout.write(failures.length === 0 ? "valid\n" : `${failures.join("\n")}\n`);
  return failures.length === 0 ? 0 : 1;
}

/** The log's positions are two PostgreSQL bigints: one outside them names no event, and the database refuses it. */
const positionPartMin = -(2n ** 63n);
const positionPartMax = 2n ** 63n - 1n;

/** The event id given, or the id of the event at the log position given; why it names none, if malformed. */
async function eventIdNamedBy(
  context: Parameters<typeof verifyProjections>[0],
  named: string,
): Promise<string | undefined | { malformed: string }> {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(named)) return named;
  let position: LogPosition;
  try {
    position = parseLogPosition(named);
  } catch {
    return { malformed: `not an event id or a log position: ${named}` };
  }
  const outOfRange = [position.commit, position.prepare].some(
    (part) => part < positionPartMin || part > positionPartMax,
  );
  if (outOfRange)
    return {
      malformed: `not a log position: ${named} (each part is at most ${positionPartMax}, at least ${positionPartMin})`,
    };
  return eventIdAt(context.pool, position);
}

async function countEvents(context: Parameters<typeof verifyProjections>[0]): Promise<number | undefined> {
  if (context.store.kind !== "postgresql") return undefined;
  const result = await context.pool.query<{ count: string }>("SELECT count(*) AS count FROM ledger_events");
  return Number(result.rows[0]!.count);
}

// The reader of the output gone (`npm run ledger -- verify | head`): the rest has no one to read it, and the
// command still ends by its verdict, the pipe's closing not being one (nor a stack trace on stderr).
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
});

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    // 1 is kept for what a check found (tampering, a difference): a check that could not run (a database
    // unreachable, a value it refused, the wrong database) is 2, as bad usage is.
    const message = error instanceof ConfigError ? error.message : `ledger: ${(error as Error).message}`;
    process.stderr.write(`${message}\n`);
    process.exit(2);
  },
);
