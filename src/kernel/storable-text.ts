/**
 * Text PostgreSQL can store. A `text` column refuses the NUL byte (U+0000). Events live in `json` columns,
 * which keep the escapes `\u0000` and `\ud800`…`\udfff` that JSON.stringify writes for NUL and for a
 * surrogate without its pair, but reading such a field back (`->>`, `json_to_record`, a cast to `jsonb`, as
 * the ledger's triggers, folds and projections do) fails. A lone surrogate sent as a `text` parameter does
 * not fail but is silently replaced by U+FFFD, so the stored id would differ from the one asked for. Both
 * are refused before they reach the database: a client's string that carries either is a bad request, not a
 * database failure.
 */

const unpairedSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const unstorableTextMessage = "must not contain NUL (U+0000) or an unpaired surrogate (U+D800–U+DFFF)";

export function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && !unpairedSurrogate.test(text);
}

/**
 * The path (object keys and array indexes) of the first string in a parsed JSON or query value that
 * PostgreSQL cannot store, either as a value or as an object key; undefined when there is none. The walk
 * keeps its own stack, so a body nested 100,000 levels deep costs memory, not the call stack.
 */
export function firstUnstorableTextPath(value: unknown): (string | number)[] | undefined {
  interface Visit {
    value: unknown;
    key: string | number | undefined;
    parent: Visit | undefined;
  }
  const pathOf = (visit: Visit): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) path.push(at.key);
    return path.reverse();
  };
  const pending: Visit[] = [{ value, key: undefined, parent: undefined }];
  for (let visit = pending.pop(); visit !== undefined; visit = pending.pop()) {
    const current = visit.value;
    if (typeof current === "string") {
      if (!isStorableText(current)) return pathOf(visit);
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index -= 1)
        pending.push({ value: current[index], key: index, parent: visit });
    } else if (current !== null && typeof current === "object") {
      const entries = Object.entries(current);
      for (let index = entries.length - 1; index >= 0; index -= 1) {
        const [key, child] = entries[index]!;
        const childVisit: Visit = { value: child, key, parent: visit };
        if (!isStorableText(key)) return pathOf(childVisit);
        pending.push(childVisit);
      }
    }
  }
  return undefined;
}
