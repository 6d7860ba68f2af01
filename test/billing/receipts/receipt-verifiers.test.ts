import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chargeUsage } from "../../../src/billing/charging/charge-usage";
import { createPricingReadModel } from "../../../src/billing/read-models/pricing-read-model";
import {
  buildChargeReceipt,
  type ChargeReceipt,
  readChargeEvents,
} from "../../../src/billing/receipts/charge-receipt";
import { receiptFailures } from "../../../src/billing/receipts/receipt-verification";
import { sealCheckpoints } from "../../../src/ledger/integrity/ledger-checkpointer";
import { LedgerSigningKey, publicKeyPemOf } from "../../../src/ledger/integrity/ledger-signing-key";
import { ProjectionWaiter } from "../../../src/ledger/projection/projection-waiter";
import { fxRateUpdated, modelPriceSet, usageRecorded } from "../../billing/billing-ledger-fixtures";
import { ledgerCommandArgs } from "../../support/built-entries";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * The two verifiers of a receipt — `npm run ledger -- verify-receipt` on the ledger's own code, and the
 * stand-alone script on node:crypto only — given the same receipts, valid or altered in each way an attacker
 * or a mistake could, then they name the same failures in the same words.
 */

const run = promisify(execFile);
const signingKeySeed = Buffer.alloc(32, 11).toString("base64");
const signingKey = LedgerSigningKey.parse(signingKeySeed);
const otherKey = LedgerSigningKey.parse(Buffer.alloc(32, 12).toString("base64"));
const standalonePath = path.resolve("src/billing/receipts/verify-receipt.mjs");

type StandaloneFailures = (receipt: unknown, publicKeyPem: string) => string[];
let standaloneFailures: StandaloneFailures;
let harness: LedgerHarness;
let unsealed: ChargeReceipt;
let sealed: ChargeReceipt;
let corrected: ChargeReceipt;
let directory: string;

async function receiptOf(requestId: string, now: Date): Promise<ChargeReceipt> {
  const rows = await readChargeEvents(harness.ledger.pool, requestId);
  return buildChargeReceipt(harness.ledger.pool, rows, now);
}

async function exitOf(
  command: string,
  args: string[],
  ledgerSigningKey = "",
  place: { cwd?: string; databaseUrl?: string } = {},
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(command, args, {
      env: {
        ...process.env,
        LEDGER_SIGNING_KEY: ledgerSigningKey,
        ...(place.databaseUrl === undefined ? {} : { DATABASE_URL: place.databaseUrl }),
      },
      ...(place.cwd === undefined ? {} : { cwd: place.cwd }),
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

/** Both verifiers on one receipt file under one PEM key file, as a customer runs them. */
async function verdictsOf(receiptFile: string, keyFile: string) {
  return {
    standalone: await exitOf("node", [standalonePath, receiptFile, keyFile]),
    cli: await exitOf(process.execPath, [
      ...ledgerCommandArgs,
      "verify-receipt",
      receiptFile,
      "--public-key",
      keyFile,
    ]),
  };
}

beforeAll(async () => {
  standaloneFailures = (
    (await import(pathToFileURL(standalonePath).href)) as { receiptFailures: StandaloneFailures }
  ).receiptFailures;
  directory = await mkdtemp(path.join(tmpdir(), "receipts-"));
  harness = await openLedgerHarness("receipt_verifiers");
  const settingsAt = "2026-11-19T15:00:00.000Z";
  await harness.append(
    modelPriceSet("alpha-5.4", { input: "1.25", cachedInput: "0.125", output: "10" }, settingsAt),
    fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1483.4" }, settingsAt),
    usageRecorded({
      requestId: "receipt-1",
      account: { kind: "user", id: "receipt-user" },
      tokens: { input: 123_456, cached: 23_456, output: 7_891, reasoning: 91 },
      startedAt: "2026-11-20T03:00:00.000Z",
    }),
  );
  await harness.project();
  const waiter = new ProjectionWaiter(harness.ledger.pool, harness.database.url, 20);
  await waiter.start();
  const charge = (requestId: string) =>
    chargeUsage(
      {
        store: harness.store,
        waiter,
        pricing: createPricingReadModel(harness.ledger.pool),
        clock: () => new Date("2026-11-20T03:00:05.000Z"),
        projectionWaitTimeoutMs: 10_000,
      },
      requestId,
    );
  try {
    await charge("receipt-1");
    // A corrected request (C10): the estimate charged, then the delivered usage charged for the difference.
    const estimate = usageRecorded({
      requestId: "receipt-corrected",
      account: { kind: "user", id: "receipt-user" },
      tokens: { input: 50_000, cached: 0, output: 9_000, reasoning: null },
      startedAt: "2026-11-20T03:00:00.000Z",
      usageSource: "estimated",
    });
    await harness.append(estimate);
    await harness.project();
    await charge("receipt-corrected");
    const delivered = usageRecorded({
      requestId: "receipt-corrected",
      account: { kind: "user", id: "receipt-user" },
      tokens: { input: 48_000, cached: 1_000, output: 4_000, reasoning: 10 },
      startedAt: "2026-11-20T03:00:00.000Z",
    });
    const correcting = delivered.events[0]!.event as { data: Record<string, unknown> };
    correcting.data.heldWon = "0";
    correcting.data.corrects = { eventId: estimate.events[0]!.eventId, pendingWon: "0" };
    await harness.append({ ...delivered, expectedVersion: "any" });
    await harness.project();
    await charge("receipt-corrected");
  } finally {
    await waiter.close();
  }
  // More events after the charge, so its inclusion path has more than one step.
  for (let index = 0; index < 5; index++)
    await harness.append(
      usageRecorded({
        requestId: `receipt-after-${index}`,
        account: { kind: "user", id: "receipt-user" },
        startedAt: "2026-11-20T03:00:10.000Z",
      }),
    );
  await harness.visible();
  unsealed = await receiptOf("receipt-1", new Date("2026-11-20T03:00:06.000Z"));
  const client = await harness.ledger.pool.connect();
  try {
    await sealCheckpoints(client, signingKey, {
      eventsMax: 10_000,
      intervalMs: 0,
      checkpointsMax: 10,
      sealPartial: true,
    });
  } finally {
    client.release();
  }
  sealed = await receiptOf("receipt-1", new Date("2026-11-20T03:01:00.000Z"));
  corrected = await receiptOf("receipt-corrected", new Date("2026-11-20T03:01:00.000Z"));
}, 120_000);

afterAll(async () => {
  await harness?.dispose();
  await rm(directory, { recursive: true, force: true });
});

/** A deep copy to alter. */
const copy = (receipt: ChargeReceipt): ChargeReceipt => JSON.parse(JSON.stringify(receipt)) as ChargeReceipt;
const sealOf = (receipt: ChargeReceipt) => {
  const seal = receipt.charges[0]!.seal;
  if (seal.status !== "sealed") throw new Error("expected a sealed charge");
  return seal;
};
const flipHex = (text: string) => (text[0] === "0" ? "1" : "0") + text.slice(1);

const alterations: [string, (receipt: ChargeReceipt) => void, string][] = [
  [
    "an amount raised in the event",
    (receipt) => {
      receipt.charges[0]!.event.data = receipt.charges[0]!.event.data.replace(
        '"amountWon":"',
        '"amountWon":"1',
      );
    },
    "chain",
  ],
  [
    "a breakdown that does not give its amount",
    (receipt) => {
      receipt.charges[0]!.event.data = receipt.charges[0]!.event.data.replace(
        '"discountRate":"0"',
        '"discountRate":"0.5"',
      );
    },
    "amount",
  ],
  [
    "a signature from another key",
    (receipt) => {
      const seal = sealOf(receipt);
      seal.checkpoint.signature = otherKey
        .sign(Buffer.from(seal.checkpoint.checkpointHash, "hex"))
        .toString("hex");
    },
    "signature",
  ],
  [
    "a sealing time moved",
    (receipt) => {
      sealOf(receipt).checkpoint.sealedAt = "2026-11-20T03:00:59.000Z";
    },
    "checkpoint",
  ],
  [
    "an inclusion path step altered",
    (receipt) => {
      const seal = sealOf(receipt);
      seal.inclusionPath[0] = flipHex(seal.inclusionPath[0]!);
    },
    "inclusion",
  ],
  [
    "a leaf index moved",
    (receipt) => {
      sealOf(receipt).leafIndex += 1;
    },
    "inclusion",
  ],
  [
    "a receipt total that is not the charge",
    (receipt) => {
      receipt.amountWon = "0.000001";
    },
    "amount",
  ],
  [
    "a breakdown shown beside the event with other tokens, FX rate and discount",
    (receipt) => {
      const breakdown = receipt.charges[0]!.breakdown;
      receipt.charges[0]!.breakdown = {
        ...breakdown,
        tokens: { ...breakdown.tokens, output: 1 },
        fxRateKrwPerUsd: "1",
        discountRate: "0.99",
      };
    },
    "copies",
  ],
  [
    "a model shown that the event does not say",
    (receipt) => {
      receipt.model = "alpha-5.4-pro";
    },
    "copies",
  ],
  [
    "a charge of another request",
    (receipt) => {
      receipt.requestId = "someone-else";
    },
    "request",
  ],
  [
    "not a receipt",
    (receipt) => {
      (receipt as { format: string }).format = "something/1";
    },
    "format",
  ],
  [
    "an event whose data is JSON's null",
    (receipt) => {
      receipt.charges[0]!.event.data = "null";
    },
    "format",
  ],
  [
    "an event whose data is a list",
    (receipt) => {
      receipt.charges[0]!.event.data = "[]";
    },
    "format",
  ],
  [
    "an event whose data has no breakdown",
    (receipt) => {
      const data = JSON.parse(receipt.charges[0]!.event.data) as Record<string, unknown>;
      delete data.breakdown;
      receipt.charges[0]!.event.data = JSON.stringify(data);
    },
    "format",
  ],
];

describe("receipt verifiers", () => {
  it("given a sealed charge, then both verifiers find its receipt valid under the published key", () => {
    expect(sealed.charges).toHaveLength(1);
    expect(sealOf(sealed).inclusionPath.length).toBeGreaterThan(1);
    expect(receiptFailures(sealed, signingKey.publicKey)).toEqual([]);
    expect(standaloneFailures(sealed, publicKeyPemOf(signingKey.publicKey))).toEqual([]);
  });

  it("given a corrected request, then its receipt holds both charges and both verifiers find it valid", () => {
    expect(corrected.charges).toHaveLength(2);
    const [first, correction] = corrected.charges;
    const correctionData = JSON.parse(correction!.event.data) as {
      correction: { correctedAmountWon: string };
    };
    expect(correctionData.correction.correctedAmountWon).toBe(first!.amountWon);
    // The estimate charged more than was delivered: the correction gives the difference back.
    expect(correction!.amountWon.startsWith("-")).toBe(true);
    expect(corrected.amountWon).toBe(correction!.breakdown.amountWon);
    expect(receiptFailures(corrected, signingKey.publicKey)).toEqual([]);
    expect(standaloneFailures(corrected, publicKeyPemOf(signingKey.publicKey))).toEqual([]);
  });

  it("given a corrected request's receipt without its first charge, then both say the correction corrects nothing in it", () => {
    const altered = copy(corrected);
    altered.charges.shift();
    const failures = receiptFailures(altered, signingKey.publicKey);
    expect(failures).toContainEqual(
      expect.stringMatching(/^amount: charge 1 .*: corrects no earlier charge of /),
    );
    expect(standaloneFailures(altered, publicKeyPemOf(signingKey.publicKey))).toEqual(failures);
  });

  it("given an event not sealed yet, then the receipt says when it will be, and neither verifier calls it valid", () => {
    expect(unsealed.charges[0]!.seal).toMatchObject({ status: "not-sealed", expectedBy: expect.any(String) });
    const failures = receiptFailures(unsealed, signingKey.publicKey);
    expect(failures).toEqual([
      expect.stringMatching(/^not-sealed: charge 1 .*; expected by 2026-11-20T03:00:/),
    ]);
    expect(standaloneFailures(unsealed, publicKeyPemOf(signingKey.publicKey))).toEqual(failures);
  });

  it.each(alterations)("given %s, then both name the same failure", (_name, alter, check) => {
    const altered = copy(sealed);
    alter(altered);
    const failures = receiptFailures(altered, signingKey.publicKey);
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.map((failure) => failure.split(":")[0])).toContain(check);
    expect(standaloneFailures(altered, publicKeyPemOf(signingKey.publicKey))).toEqual(failures);
  });

  it.each([
    ["a sealing time that is no instant", { sealedAt: "yesterday" }, "checkpoint.sealedAt is not an instant"],
    [
      "a sealing time that is no text",
      { sealedAt: 1_763_607_660_000 },
      "checkpoint.sealedAt is not an instant",
    ],
    ["a range end that is no log position", { last: null }, "checkpoint.last is not a log position"],
    ["a sequence that is no number", { sequence: "2" }, "checkpoint.sequence is not a sequence number"],
    [
      "an event count that is no count",
      { eventCount: 1.5 },
      "checkpoint.eventCount is not a count of events",
    ],
  ])("given a checkpoint with %s, then both name the field, in the same words", (_name, fields, said) => {
    const altered = copy(sealed);
    Object.assign(sealOf(altered).checkpoint, fields);
    const failures = receiptFailures(altered, signingKey.publicKey);
    expect(failures).toContainEqual(
      expect.stringMatching(new RegExp(`^checkpoint: charge 1 \\(.*\\): ${said}$`)),
    );
    expect(standaloneFailures(altered, publicKeyPemOf(signingKey.publicKey))).toEqual(failures);
  });

  it.each([
    [
      "no inclusion path",
      (seal: Extract<ChargeReceipt["charges"][number]["seal"], { status: "sealed" }>) => {
        (seal as { inclusionPath: unknown }).inclusionPath = null;
      },
      "inclusionPath is not a list of hashes",
    ],
    [
      "no checkpoint",
      (seal: Extract<ChargeReceipt["charges"][number]["seal"], { status: "sealed" }>) => {
        (seal as { checkpoint: unknown }).checkpoint = null;
      },
      "checkpoint is not an object",
    ],
  ])("given a seal with %s, then both name it, in the same words", (_name, alter, said) => {
    const altered = copy(sealed);
    alter(sealOf(altered));
    const failures = receiptFailures(altered, signingKey.publicKey);
    expect(failures).toEqual([expect.stringMatching(new RegExp(`^checkpoint: charge 1 \\(.*\\): ${said}$`))]);
    expect(standaloneFailures(altered, publicKeyPemOf(signingKey.publicKey))).toEqual(failures);
  });

  it("given a public key file that is no Ed25519 public key, then both give the same verdict, exit 1", async () => {
    const receiptFile = path.join(directory, "receipt-for-bad-keys.json");
    await writeFile(receiptFile, JSON.stringify(sealed));
    const { generateKeyPairSync } = await import("node:crypto");
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({
      type: "spki",
      format: "pem",
    });
    for (const [name, pem, said] of [
      ["garbage.pem", "garbage\n", "signature: the public key is not a PEM public key\n"],
      ["rsa.pem", rsa.toString(), "signature: the public key is not an Ed25519 key\n"],
    ] as const) {
      const keyFile = path.join(directory, name);
      await writeFile(keyFile, pem);
      const { standalone, cli } = await verdictsOf(receiptFile, keyFile);
      expect(standalone).toEqual({ code: 1, output: said });
      expect(cli).toEqual(standalone);
    }
  }, 120_000);

  it("given a key that did not sign the checkpoint, then both refuse the signature", () => {
    const failures = receiptFailures(sealed, otherKey.publicKey);
    expect(failures).toEqual([expect.stringMatching(/^signature: /)]);
    expect(standaloneFailures(sealed, publicKeyPemOf(otherKey.publicKey))).toEqual(failures);
  });

  it("prints valid and exits 0 from the command line, both ways; names the failure and exits 1 otherwise", async () => {
    const receiptFile = path.join(directory, "receipt.json");
    const alteredFile = path.join(directory, "altered.json");
    const keyFile = path.join(directory, "public-key.pem");
    await writeFile(receiptFile, JSON.stringify(sealed, null, 2));
    const altered = copy(sealed);
    alterations[0]![1](altered);
    await writeFile(alteredFile, JSON.stringify(altered));
    await writeFile(keyFile, publicKeyPemOf(signingKey.publicKey));

    const { standalone, cli } = await verdictsOf(receiptFile, keyFile);
    expect(standalone).toEqual({ code: 0, output: "valid\n" });
    expect(cli).toEqual({ code: 0, output: "valid\n" });

    const { standalone: standaloneAltered, cli: cliAltered } = await verdictsOf(alteredFile, keyFile);
    expect(standaloneAltered.code).toBe(1);
    expect(standaloneAltered.output).toMatch(
      /^chain: charge 1 \(UsageCharged .*\): the event's bytes do not hash/m,
    );
    expect(cliAltered).toEqual(standaloneAltered);

    expect((await exitOf("node", [standalonePath, receiptFile])).code).toBe(2);
    // Without --public-key the command trusts the configured signing key, and only it.
    const configuredCli = [...ledgerCommandArgs, "verify-receipt", receiptFile];
    expect(await exitOf(process.execPath, configuredCli, signingKeySeed)).toEqual({
      code: 0,
      output: "valid\n",
    });
    expect((await exitOf(process.execPath, configuredCli)).code).toBe(2);
  }, 120_000);

  it("given the list answered for a body id several requests share, then both check each receipt in it and name a failure by its place; a cut file is no JSON, in one line", async () => {
    const keyFile = path.join(directory, "public-key-for-lists.pem");
    await writeFile(keyFile, publicKeyPemOf(signingKey.publicKey));
    const listOf = (...data: unknown[]) => ({ object: "list", data });
    const listFile = path.join(directory, "receipts.json");
    await writeFile(listFile, JSON.stringify(listOf(sealed, corrected)));

    const valid = await verdictsOf(listFile, keyFile);
    expect(valid.standalone).toEqual({ code: 0, output: "valid\n" });
    expect(valid.cli).toEqual(valid.standalone);

    const altered = copy(corrected);
    alterations[0]![1](altered);
    const alteredFile = path.join(directory, "receipts-altered.json");
    await writeFile(alteredFile, JSON.stringify(listOf(sealed, altered)));
    const invalid = await verdictsOf(alteredFile, keyFile);
    expect(invalid.standalone.code).toBe(1);
    expect(invalid.standalone.output).toMatch(/^receipt 2 of 2: chain: charge 1 \(UsageCharged .*\): /);
    expect(invalid.standalone.output).not.toMatch(/^receipt 1 of 2/m);
    expect(invalid.cli).toEqual(invalid.standalone);

    const truncatedFile = path.join(directory, "receipts-truncated.json");
    await writeFile(truncatedFile, JSON.stringify(listOf(sealed), null, 2).slice(0, 200));
    const truncated = await verdictsOf(truncatedFile, keyFile);
    expect(truncated.standalone).toEqual({ code: 1, output: "format: the file is not JSON\n" });
    expect(truncated.cli).toEqual(truncated.standalone);

    const emptyFile = path.join(directory, "receipts-empty.json");
    await writeFile(emptyFile, JSON.stringify(listOf()));
    const empty = await verdictsOf(emptyFile, keyFile);
    expect(empty.standalone).toEqual({ code: 1, output: "format: the list holds no receipt\n" });
    expect(empty.cli).toEqual(empty.standalone);
  }, 120_000);

  it("given the embedded setup (no DATABASE_URL, no LEDGER_SIGNING_KEY), then the command trusts the key kept in ./.data/, as verify finds it", async () => {
    const checkout = await mkdtemp(path.join(tmpdir(), "embedded-checkout-"));
    await mkdir(path.join(checkout, ".data"));
    const receiptFile = path.join(checkout, "receipt.json");
    await writeFile(receiptFile, JSON.stringify(sealed));
    const command = [path.resolve("src/ledger-cli.ts"), "verify-receipt", receiptFile];
    const tsx = path.resolve("node_modules/.bin/tsx");
    const embedded = { cwd: checkout, databaseUrl: "" };
    try {
      // No key kept yet: none is made up, and the answer says where one is looked for.
      const none = await exitOf(tsx, command, "", embedded);
      expect(none.code).toBe(2);
      expect(none.output).toContain("./.data/");
      await expect(stat(path.join(checkout, ".data", "ledger-signing-key"))).rejects.toThrow();

      await writeFile(path.join(checkout, ".data", "ledger-signing-key"), `${signingKeySeed}\n`);
      expect(await exitOf(tsx, command, "", embedded)).toEqual({ code: 0, output: "valid\n" });
      // With a DATABASE_URL the deployment is not the embedded one, and ./.data/ is not its key.
      const elsewhere = { cwd: checkout, databaseUrl: "postgres://127.0.0.1:1/elsewhere" };
      expect((await exitOf(tsx, command, "", elsewhere)).code).toBe(2);

      await writeFile(
        path.join(checkout, ".data", "ledger-signing-key"),
        `${Buffer.alloc(32, 12).toString("base64")}\n`,
      );
      const wrongKey = await exitOf(tsx, command, "", embedded);
      expect(wrongKey.code).toBe(1);
      expect(wrongKey.output).toMatch(/^signature: /);
    } finally {
      await rm(checkout, { recursive: true, force: true });
    }
  }, 120_000);
});
