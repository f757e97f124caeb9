/// <reference types="jest" />
import type { LogEntry } from '../../model/entities';
import type { LogStore } from '../../ports/services';

/** What the log store contract needs: a store and a way to release it. */
export interface OpenedLogStore {
  store: LogStore;
  close(): Promise<void>;
}

/** Opens a fresh, empty log store; each test gets its own. */
export type OpenLogStore = () => Promise<OpenedLogStore>;

// Millisecond parts on purpose: a store that drops them fails the round-trip tests.
const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 123);

function entry(n: number, message = `line ${n}`, source = 'myapp[web.1]'): LogEntry {
  return { time: new Date(BASE + n * 1000 + (n % 997)), source, message };
}

function entries(from: number, to: number, source?: string): LogEntry[] {
  const result: LogEntry[] = [];
  for (let n = from; n <= to; n++) result.push(entry(n, `line ${n}`, source));
  return result;
}

/**
 * Registers the shared contract tests of the LogStore port against the store that `open`
 * creates; `open` is called before each test and must return an empty store.
 */
export function describeLogStoreContract(label: string, open: OpenLogStore): void {
  describe(`${label}: LogStore contract`, () => {
    let current: OpenedLogStore | undefined;
    const store = (): LogStore => {
      if (current === undefined) throw new Error('The store is only open while a test runs');
      return current.store;
    };

    beforeEach(async () => {
      current = await open();
    });
    afterEach(async () => {
      const opened = current;
      current = undefined;
      await opened?.close();
    });

    it('tail of an app without lines is empty', async () => {
      expect(await store().tail('myapp', 10)).toEqual([]);
    });

    it('tail returns the appended entries oldest first, with time, source and message intact', async () => {
      await store().append('myapp', [entry(1), entry(2, 'alice created initial release', 'svc[api]')]);

      expect(await store().tail('myapp', 10)).toEqual([entry(1), entry(2, 'alice created initial release', 'svc[api]')]);
    });

    it('tail returns only the last n entries, all of them when fewer are stored, none for n below 1', async () => {
      await store().append('myapp', entries(1, 5));

      expect(await store().tail('myapp', 2)).toEqual([entry(4), entry(5)]);
      expect(await store().tail('myapp', 1)).toEqual([entry(5)]);
      expect(await store().tail('myapp', 100)).toEqual(entries(1, 5));
      expect(await store().tail('myapp', 0)).toEqual([]);
      expect(await store().tail('myapp', -3)).toEqual([]);
    });

    it('appends of several calls keep their order', async () => {
      await store().append('myapp', entries(1, 3));
      await store().append('myapp', entries(4, 4));
      await store().append('myapp', entries(5, 7));

      expect(await store().tail('myapp', 5)).toEqual(entries(3, 7));
    });

    it('an append of no entries stores nothing', async () => {
      await store().append('myapp', []);
      await store().append('myapp', entries(1, 1));
      await store().append('myapp', []);

      expect(await store().tail('myapp', 10)).toEqual(entries(1, 1));
    });

    it('keeps the logs of different apps apart', async () => {
      await store().append('myapp', entries(1, 2));
      await store().append('other-app', entries(3, 3, 'other-app[web.1]'));
      await store().append('myapp', entries(4, 4));

      expect(await store().tail('myapp', 10)).toEqual([entry(1), entry(2), entry(4)]);
      expect(await store().tail('other-app', 10)).toEqual(entries(3, 3, 'other-app[web.1]'));
    });

    it('keeps messages with newlines, tabs, backslashes and non-ASCII text exactly', async () => {
      const tricky = [
        entry(1, 'first line\nsecond line'),
        entry(2, 'a\tb\\c\r\n'),
        entry(3, 'héllo wörld — 日本語 🚀', 'svc[api]'),
        entry(4, ''),
      ];
      await store().append('myapp', tricky);

      expect(await store().tail('myapp', 10)).toEqual(tricky);
    });

    it('a large append is kept whole, and tail still returns the newest lines', async () => {
      await store().append('myapp', entries(1, 1500));

      expect(await store().tail('myapp', 3)).toEqual(entries(1498, 1500));
      expect(await store().tail('myapp', 2000)).toHaveLength(1500);
    });

    it('concurrent appends to one app keep every line and the order within each append', async () => {
      const batches = Array.from({ length: 10 }, (_, b) => entries(b * 5 + 1, b * 5 + 5, `myapp[web.${b}]`));

      await Promise.all(batches.map((batch) => store().append('myapp', batch)));

      const stored = await store().tail('myapp', 100);
      expect(stored).toHaveLength(50);
      for (const batch of batches) {
        const source = batch[0]?.source;
        expect(stored.filter((e) => e.source === source)).toEqual(batch);
      }
    });

    it('remove deletes the app\'s lines only, and a later append starts a fresh log', async () => {
      await store().append('myapp', entries(1, 3));
      await store().append('other-app', entries(4, 4));

      await store().remove('myapp');

      expect(await store().tail('myapp', 10)).toEqual([]);
      expect(await store().tail('other-app', 10)).toEqual(entries(4, 4));
      await store().append('myapp', entries(5, 5));
      expect(await store().tail('myapp', 10)).toEqual(entries(5, 5));
    });

    it('removing an app without lines is fine', async () => {
      await expect(store().remove('never-logged')).resolves.toBeUndefined();
    });

    it('returns copies: changing a returned entry does not change the stored one', async () => {
      await store().append('myapp', entries(1, 1));
      const [first] = await store().tail('myapp', 1);
      first?.time.setTime(0);

      expect(await store().tail('myapp', 1)).toEqual(entries(1, 1));
    });

    it('stores copies: changing an appended entry afterwards does not change the stored one', async () => {
      const appended = entries(1, 1);
      await store().append('myapp', appended);
      appended[0]?.time.setTime(0);

      expect(await store().tail('myapp', 1)).toEqual(entries(1, 1));
    });
  });
}
