import { createPrivateKey, createPublicKey, type KeyObject, randomBytes, sign, verify } from "node:crypto";

/**
 * The Ed25519 key that signs ledger checkpoints (`LEDGER_SIGNING_KEY`): the 32-byte private seed in base64
 * or base64url, or a PKCS#8 PEM. `ledger verify` trusts only this key's public half, never the public key
 * stored beside a checkpoint (an attacker with the database could store their own).
 */

export class LedgerSigningKey {
  readonly publicKey: Buffer;

  private constructor(private readonly privateKey: KeyObject) {
    this.publicKey = rawPublicKey(createPublicKey(privateKey));
  }

  static parse(text: string): LedgerSigningKey {
    const trimmed = text.trim();
    if (trimmed.includes("BEGIN PRIVATE KEY")) {
      const key = createPrivateKey(trimmed);
      if (key.asymmetricKeyType !== "ed25519") throw new RangeError("the signing key is not an Ed25519 key");
      return new LedgerSigningKey(key);
    }
    const seed = Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (seed.length !== 32) throw new RangeError("the signing key is not 32 bytes of base64");
    return new LedgerSigningKey(
      createPrivateKey({ key: Buffer.concat([pkcs8Ed25519Prefix, seed]), format: "der", type: "pkcs8" }),
    );
  }

  /** A new key as its base64url seed, for the embedded setup's `./.data/`. */
  static generateSeed(): string {
    return randomBytes(32).toString("base64url");
  }

  sign(message: Buffer): Buffer {
    return sign(null, message, this.privateKey);
  }
}

export function verifySignature(publicKey: Buffer, message: Buffer, signature: Buffer): boolean {
  try {
    const key = createPublicKey({
      key: Buffer.concat([spkiEd25519Prefix, publicKey]),
      format: "der",
      type: "spki",
    });
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}

// DER headers of an Ed25519 key (RFC 8410): the raw 32 bytes follow.
const pkcs8Ed25519Prefix = Buffer.from("302e020100300506032b657004220420", "hex");
const spkiEd25519Prefix = Buffer.from("302a300506032b6570032100", "hex");

function rawPublicKey(key: KeyObject): Buffer {
  const der = key.export({ format: "der", type: "spki" });
  return der.subarray(der.length - 32);
}

/** The raw Ed25519 public key as a PEM (SPKI) document, the form `GET /ledger/public-key` publishes. */
export function publicKeyPemOf(publicKey: Buffer): string {
  return createPublicKey({ key: Buffer.concat([spkiEd25519Prefix, publicKey]), format: "der", type: "spki" })
    .export({ format: "pem", type: "spki" })
    .toString();
}

/** The raw 32 bytes of an Ed25519 public key given as PEM; throws on anything else. */
export function rawPublicKeyOfPem(pem: string): Buffer {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== "ed25519") throw new RangeError("the public key is not an Ed25519 key");
  return rawPublicKey(key);
}
