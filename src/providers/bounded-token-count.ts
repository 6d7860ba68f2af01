/**
 * Token counting whose cost is bounded by the text's length. A BPE tokenizer merges within each piece its
 * pre-tokenizer splits off (a word, a run of spaces, of punctuation, of letters without a break), and the
 * merge costs the square of the piece's length: one 1 MB "word" — a request's message, as a client may send
 * it — pins the event loop for many minutes. Runs longer than any real word are counted in slices, which
 * errs by at most a token or so per slice; every other text counts exactly as the tokenizer counts it.
 */

/** Longer than any word of any language; a slice of this many characters costs well under a millisecond. */
const pieceCharactersMax = 64;
const longRun = new RegExp(
  `[\\p{L}\\p{M}]{${pieceCharactersMax},}|\\s{${pieceCharactersMax},}|[^\\s\\p{L}\\p{M}\\p{N}]{${pieceCharactersMax},}`,
  "gu",
);

export function boundedTokenCounter(countTokens: (text: string) => number): (text: string) => number {
  return (text) => {
    let total = 0;
    let countedTo = 0;
    for (const match of text.matchAll(longRun)) {
      if (match.index > countedTo) total += countTokens(text.slice(countedTo, match.index));
      const run = match[0];
      for (let start = 0; start < run.length; ) {
        const end = sliceEndOf(run, start);
        total += countTokens(run.slice(start, end));
        start = end;
      }
      countedTo = match.index + run.length;
    }
    if (countedTo < text.length) total += countTokens(countedTo === 0 ? text : text.slice(countedTo));
    return total;
  };
}

/** The end of a slice from `start`, never between the two halves of a surrogate pair. */
function sliceEndOf(run: string, start: number): number {
  const end = Math.min(start + pieceCharactersMax, run.length);
  const unit = run.charCodeAt(end);
  return end < run.length && unit >= 0xdc00 && unit <= 0xdfff ? end - 1 : end;
}
