/**
 * A position in the global log. Both stores order the log by a pair of integers compared in order:
 * PostgreSQL by (transaction order, event position), EventStoreDB by (commit, prepare) position. Outside
 * the stores a position is opaque: compare it with `compareLogPositions`, carry it as `formatLogPosition`.
 */
export interface LogPosition {
  readonly commit: bigint;
  readonly prepare: bigint;
}

export const logStart: LogPosition = Object.freeze({ commit: -1n, prepare: -1n });

export function compareLogPositions(left: LogPosition, right: LogPosition): number {
  if (left.commit !== right.commit) return left.commit < right.commit ? -1 : 1;
  if (left.prepare !== right.prepare) return left.prepare < right.prepare ? -1 : 1;
  return 0;
}

export function isAtOrAfter(position: LogPosition, target: LogPosition): boolean {
  return compareLogPositions(position, target) >= 0;
}

export function formatLogPosition(position: LogPosition): string {
  return `${position.commit}-${position.prepare}`;
}

const positionPattern = /^(-?\d{1,20})-(-?\d{1,20})$/;

export function parseLogPosition(text: string): LogPosition {
  const match = positionPattern.exec(text);
  if (!match) throw new RangeError(`not a log position: ${JSON.stringify(text)}`);
  return { commit: BigInt(match[1]!), prepare: BigInt(match[2]!) };
}
