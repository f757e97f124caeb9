import { mapConcurrently } from '../src/rules/concurrency';

describe('mapConcurrently', () => {
  it('keeps at most `limit` calls pending, and answers in the items\' order whatever order they finish in', async () => {
    let pending = 0;
    let most = 0;
    const delays = [30, 5, 20, 1, 15, 2, 25, 3];
    const results = await mapConcurrently(delays, 3, async (delay, index) => {
      pending++;
      most = Math.max(most, pending);
      await new Promise((done) => setTimeout(done, delay));
      pending--;
      return `${index}:${delay}`;
    });
    expect(most).toBe(3);
    expect(results).toEqual(delays.map((delay, index) => `${index}:${delay}`));
  });

  it('calls each item once, with no items and with a limit above their count', async () => {
    const seen: number[] = [];
    await expect(mapConcurrently([], 4, async () => 1)).resolves.toEqual([]);
    await expect(mapConcurrently([1, 2], 16, async (n) => (seen.push(n), n * 2))).resolves.toEqual([2, 4]);
    expect(seen.sort()).toEqual([1, 2]);
  });

  it('rejects with the first failure', async () => {
    await expect(mapConcurrently([1, 2, 3], 2, async (n) => (n === 2 ? Promise.reject(new Error('two')) : n))).rejects.toThrow('two');
  });
});
