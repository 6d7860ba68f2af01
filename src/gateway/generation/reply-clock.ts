/**
 * Reply ids are `chatcmpl-<ms>` / `resp-<ms>` (interface.md) and unique among the requests one process
 * serves (C12). Two requests started in the same millisecond would share an id, so each reply takes the
 * later of its start and one past the previous reply's: under a burst the stamps run a few milliseconds
 * ahead of the clock and catch up as soon as the burst thins.
 */
let lastReplyMilliseconds = 0;

export function nextReplyMilliseconds(startedAtMs: number): number {
  lastReplyMilliseconds = Math.max(startedAtMs, lastReplyMilliseconds + 1);
  return lastReplyMilliseconds;
}
