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

/** Waits until `condition` holds, checking every few milliseconds; fails after `timeoutMs`. */
async function eventually(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A listener that keeps what it was given. */
function recorder(): { listener: (entries: LogEntry[]) => void; received: LogEntry[]; calls: number } {
  const state = {
    received: [] as LogEntry[],
    calls: 0,
    listener: (batch: LogEntry[]): void => {
      state.calls += 1;
      state.received.push(...batch);
    },
  };
  return state;
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

    describe('subscribe', () => {
      it('delivers the entries appended after subscribing, in order, with time, source and message intact', async () => {
        await store().append('myapp', entries(1, 3));
        const seen = recorder();

        const unsubscribe = store().subscribe('myapp', seen.listener);
        await store().append('myapp', entries(4, 5));
        await store().append('myapp', [entry(6, 'héllo\nwörld', 'svc[api]')]);
        await eventually(() => seen.received.length >= 3, 'three entries arrived');
        unsubscribe();

        expect(seen.received).toEqual([...entries(4, 5), entry(6, 'héllo\nwörld', 'svc[api]')]);
      });

      it('delivers only the entries of the subscribed app', async () => {
        const mine = recorder();
        const theirs = recorder();
        const unsubscribeMine = store().subscribe('myapp', mine.listener);
        const unsubscribeTheirs = store().subscribe('other-app', theirs.listener);

        await store().append('other-app', entries(1, 1, 'other-app[web.1]'));
        await store().append('myapp', entries(2, 2));
        await eventually(() => mine.received.length >= 1 && theirs.received.length >= 1, 'both apps got their line');
        unsubscribeMine();
        unsubscribeTheirs();

        expect(mine.received).toEqual(entries(2, 2));
        expect(theirs.received).toEqual(entries(1, 1, 'other-app[web.1]'));
      });

      it('after unsubscribing a listener gets nothing more, while another listener of the app still does', async () => {
        const leaving = recorder();
        const staying = recorder();
        const unsubscribeLeaving = store().subscribe('myapp', leaving.listener);
        const unsubscribeStaying = store().subscribe('myapp', staying.listener);
        await store().append('myapp', entries(1, 1));
        await eventually(() => leaving.received.length >= 1 && staying.received.length >= 1, 'both listeners got the first line');

        unsubscribeLeaving();
        unsubscribeLeaving();
        await store().append('myapp', entries(2, 3));
        await eventually(() => staying.received.length >= 3, 'the remaining listener got the later lines');
        unsubscribeStaying();

        expect(leaving.received).toEqual(entries(1, 1));
        expect(staying.received).toEqual(entries(1, 3));
      });

      it('subscribing one function twice gives two subscriptions, each removed on its own', async () => {
        const seen = recorder();
        const first = store().subscribe('myapp', seen.listener);
        const second = store().subscribe('myapp', seen.listener);
        await store().append('myapp', entries(1, 1));
        await eventually(() => seen.received.length >= 2, 'both subscriptions delivered');

        first();
        await store().append('myapp', entries(2, 2));
        await eventually(() => seen.received.length >= 3, 'the second subscription delivered');
        second();

        expect(seen.received).toEqual([entry(1), entry(1), entry(2)]);
      });

      it('a listener that throws neither fails the append nor keeps other listeners from their entries', async () => {
        const seen = recorder();
        const failing = store().subscribe('myapp', () => {
          throw new Error('listener failure');
        });
        const working = store().subscribe('myapp', seen.listener);

        await expect(store().append('myapp', entries(1, 2))).resolves.toBeUndefined();
        await eventually(() => seen.received.length >= 2, 'the working listener got the lines');
        failing();
        working();

        expect(seen.received).toEqual(entries(1, 2));
        expect(await store().tail('myapp', 10)).toEqual(entries(1, 2));
      });

      it('every listener gets its own copies', async () => {
        const first = recorder();
        const second = recorder();
        const unsubscribeFirst = store().subscribe('myapp', (batch) => {
          for (const e of batch) e.time.setTime(0);
          first.listener(batch);
        });
        const unsubscribeSecond = store().subscribe('myapp', second.listener);

        await store().append('myapp', entries(1, 1));
        await eventually(() => first.received.length >= 1 && second.received.length >= 1, 'both listeners got the line');
        unsubscribeFirst();
        unsubscribeSecond();

        expect(second.received).toEqual(entries(1, 1));
        expect(await store().tail('myapp', 1)).toEqual(entries(1, 1));
      });

      it('concurrent appends are each delivered once, with the order within each append kept', async () => {
        const seen = recorder();
        const unsubscribe = store().subscribe('myapp', seen.listener);
        const batches = Array.from({ length: 8 }, (_, b) => entries(b * 4 + 1, b * 4 + 4, `myapp[web.${b}]`));

        await Promise.all(batches.map((batch) => store().append('myapp', batch)));
        await eventually(() => seen.received.length >= 32, 'every line arrived');
        unsubscribe();

        expect(seen.received).toHaveLength(32);
        for (const batch of batches) {
          const source = batch[0]?.source;
          expect(seen.received.filter((e) => e.source === source)).toEqual(batch);
        }
      });

      it('a subscription followed by tail leaves no line out: each line is in the tail or delivered', async () => {
        await store().append('myapp', entries(1, 3));
        const seen = recorder();

        const unsubscribe = store().subscribe('myapp', seen.listener);
        const appending = store().append('myapp', entries(4, 6));
        const tailed = await store().tail('myapp', 100);
        await appending;
        await eventually(() => tailed.length + seen.received.length >= 6, 'every line is accounted for');
        unsubscribe();

        const union = [...tailed, ...seen.received.filter((e) => !tailed.some((t) => t.time.getTime() === e.time.getTime()))];
        expect(union).toEqual(entries(1, 6));
      });
    });

    it('stores copies: changing an appended entry afterwards does not change the stored one', async () => {
      const appended = entries(1, 1);
      await store().append('myapp', appended);
      appended[0]?.time.setTime(0);

      expect(await store().tail('myapp', 1)).toEqual(entries(1, 1));
    });
  });
}
