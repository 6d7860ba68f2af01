import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  inclusionPath,
  leafHash,
  merkleRoot,
  rootFromInclusionPath,
} from "../../../src/ledger/integrity/merkle-tree";

const leaf = (index: number) => createHash("sha256").update(`leaf ${index}`).digest();
const node = (left: Buffer, right: Buffer) =>
  createHash("sha256")
    .update(Buffer.from([1]))
    .update(left)
    .update(right)
    .digest();

/** RFC 6962 §2.1 MTH, written as the RFC states it, recursively. */
function referenceRoot(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return createHash("sha256").digest();
  if (leaves.length === 1) return leafHash(leaves[0]!);
  let split = 1;
  while (split * 2 < leaves.length) split *= 2;
  return node(referenceRoot(leaves.slice(0, split)), referenceRoot(leaves.slice(split)));
}

describe("RFC 6962 Merkle tree", () => {
  it("computes the RFC's tree hash for every size up to 70", () => {
    for (let count = 0; count <= 70; count++) {
      const leaves = Array.from({ length: count }, (_, index) => leaf(index));
      expect(merkleRoot(leaves).toString("hex"), `size ${count}`).toBe(referenceRoot(leaves).toString("hex"));
    }
  });

  it("proves every leaf of every size up to 40, and rejects a wrong leaf or index", () => {
    for (let count = 1; count <= 40; count++) {
      const leaves = Array.from({ length: count }, (_, index) => leaf(index));
      const root = merkleRoot(leaves);
      for (let index = 0; index < count; index++) {
        const path = inclusionPath(leaves, index);
        expect(rootFromInclusionPath(leaves[index]!, index, count, path).equals(root)).toBe(true);
        expect(rootFromInclusionPath(leaf(1_000), index, count, path).equals(root)).toBe(false);
        if (count > 1) {
          const otherIndex = (index + 1) % count;
          const other = (() => {
            try {
              return rootFromInclusionPath(leaves[index]!, otherIndex, count, path).equals(root);
            } catch {
              return false;
            }
          })();
          expect(other).toBe(false);
        }
      }
    }
  });
});
