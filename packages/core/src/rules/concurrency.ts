/**
 * Calls `work` for every item with at most `limit` calls pending at once, and resolves with
 * the results in the items' order. Used where many independent waits on an engine (one per
 * container) would add up if made one after the other, and would swamp it if made all at once.
 * A rejection is the caller's to avoid: the first one rejects the whole (the calls already
 * started still run).
 */
export async function mapConcurrently<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(Math.floor(limit), items.length)) }, lane));
  return results;
}
