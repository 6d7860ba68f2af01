/** "1 account", "2 accounts": a count with its noun, for messages people read. */
export function counted(count: number | bigint, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 || count === 1n ? noun : nounPlural}`;
}
