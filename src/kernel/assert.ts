/**
 * Programmer errors, TigerBeetle style: an invariant the code relies on, checked where it must hold, so a
 * broken assumption stops loudly instead of billing wrongly. Not for what a client or an operator can get
 * wrong: those are typed errors mapped once at the edge (ConfigError at start).
 *
 * Ours rather than node:assert, which would work the same for `assert(condition, message)`: here the message
 * is required (each assertion says which invariant broke, in the words of the code around it), the error has
 * a class of its own that tests and the edge can tell from node's (whose `assert.equal`s elsewhere throw for
 * other reasons), and nothing is generated from the source text at throw time.
 */
export class AssertionError extends Error {
  override readonly name = "AssertionError";
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
