import { createHash } from "node:crypto";

/**
 * RFC 6962 (Certificate Transparency) Merkle tree hash over the leaves of one checkpoint, and the audit
 * path that proves one leaf is in it. Leaf: SHA-256(0x00 ‖ leaf); node: SHA-256(0x01 ‖ left ‖ right);
 * a tree of n leaves splits at the largest power of two below n.
 */

const leafPrefix = Buffer.from([0]);
const nodePrefix = Buffer.from([1]);

function sha256(...parts: Buffer[]): Buffer {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
}

export function leafHash(leaf: Buffer): Buffer {
  return sha256(leafPrefix, leaf);
}

function nodeHash(left: Buffer, right: Buffer): Buffer {
  return sha256(nodePrefix, left, right);
}

function splitPoint(count: number): number {
  let split = 1;
  while (split * 2 < count) split *= 2;
  return split;
}

/** Iterative over levels (no recursion depth to bound); equal to RFC 6962's MTH for every count. */
export function merkleRoot(leaves: readonly Buffer[]): Buffer {
  if (leaves.length === 0) return sha256();
  let level = leaves.map(leafHash);
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let index = 0; index + 1 < level.length; index += 2)
      next.push(nodeHash(level[index]!, level[index + 1]!));
    // An odd node rises unchanged: the same tree as splitting at the largest power of two.
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return level[0]!;
}

/** RFC 6962 PATH(m, D[n]): the sibling hashes from the leaf up to the root. */
export function inclusionPath(leaves: readonly Buffer[], index: number): Buffer[] {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) throw new RangeError("leaf index");
  const path: Buffer[] = [];
  let start = 0;
  let end = leaves.length;
  const frames: Buffer[] = [];
  while (end - start > 1) {
    const split = splitPoint(end - start);
    if (index - start < split) {
      frames.push(merkleRoot(leaves.slice(start + split, end)));
      end = start + split;
    } else {
      frames.push(merkleRoot(leaves.slice(start, start + split)));
      start += split;
    }
  }
  // Collected top-down; the path runs bottom-up.
  for (let frame = frames.length - 1; frame >= 0; frame--) path.push(frames[frame]!);
  return path;
}

/** RFC 9162 §2.1.3.2: recomputes the root from a leaf, its index, the tree size and the path. */
export function rootFromInclusionPath(
  leaf: Buffer,
  index: number,
  count: number,
  path: readonly Buffer[],
): Buffer {
  if (index >= count) throw new RangeError("leaf index beyond the tree");
  let fn = index;
  let sn = count - 1;
  let root = leafHash(leaf);
  for (const sibling of path) {
    if (sn === 0) throw new RangeError("inclusion path too long");
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
  if (sn !== 0) throw new RangeError("inclusion path too short");
  return root;
}
