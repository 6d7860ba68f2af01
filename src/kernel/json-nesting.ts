/**
 * How deep a parsed JSON value nests, measured without recursion (a hostile value may nest further than the
 * stack goes) and only as far as the bound: a value is walked no further than `depthMax + 1` containers
 * down, and each container once.
 */
export function nestsDeeperThan(value: unknown, depthMax: number): boolean {
  const waiting: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  for (let next = waiting.pop(); next !== undefined; next = waiting.pop()) {
    if (next.value === null || typeof next.value !== "object") continue;
    if (next.depth > depthMax) return true;
    const children = Array.isArray(next.value) ? next.value : Object.values(next.value);
    for (const child of children) waiting.push({ value: child, depth: next.depth + 1 });
  }
  return false;
}
