import { appendFile, mkdtemp, open, readFile, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogEntry } from '@svc/core';
import { FileLogStore as Store, type FileLogStoreOptions } from '@svc/logs-file';

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0);

function entry(n: number, message = `line ${n}`, source = 'myapp[web.1]'): LogEntry {
  return { time: new Date(T0 + n * 1000 + (n % 1000)), source, message };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Every store a test makes, closed after it: they keep their files open. */
const made: Store[] = [];

/** A FileLogStore that the test's end closes. */
class FileLogStore extends Store {
  constructor(directory: string, options?: FileLogStoreOptions) {
    super(directory, options);
    made.push(this);
  }
}

describe('FileLogStore', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-logs-'));
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await Promise.all(made.splice(0).map((store) => store.close()));
    await rm(dir, { recursive: true, force: true });
  });

  describe('append and tail', () => {
    it('returns the last n entries oldest first, with time, source and message intact', async () => {
      const store = new FileLogStore(dir);
      await store.append('myapp', [entry(1), entry(2, 'second', 'svc[api]')]);
      await store.append('myapp', [entry(3), entry(4)]);

      expect(await store.tail('myapp', 3)).toEqual([entry(2, 'second', 'svc[api]'), entry(3), entry(4)]);
      expect(await store.tail('myapp', 100)).toEqual([entry(1), entry(2, 'second', 'svc[api]'), entry(3), entry(4)]);
      expect(await store.tail('myapp', 1)).toEqual([entry(4)]);
      expect(await store.tail('myapp', 0)).toEqual([]);
    });

    it('stores one line per entry in <app>.log and keeps apps apart', async () => {
      const store = new FileLogStore(dir);
      await store.append('myapp', [entry(1), entry(2)]);
      await store.append('other-app', [entry(3)]);

      const text = await readFile(join(dir, 'myapp.log'), 'utf8');

      expect(text.split('\n')).toEqual([expect.stringMatching(/^2026-11-21T10:00:01\.001Z\tmyapp\[web\.1\]\tline 1$/), expect.any(String), '']);
      expect(await store.tail('other-app', 10)).toEqual([entry(3)]);
    });

    it('tails an unknown app to nothing and creates the directory only on the first append', async () => {
      const nested = join(dir, 'a', 'b');
      const store = new FileLogStore(nested);

      expect(await store.tail('myapp', 10)).toEqual([]);
      expect(await exists(nested)).toBe(false);
      await store.append('myapp', [entry(1)]);

      expect(await store.tail('myapp', 10)).toEqual([entry(1)]);
    });

    it('creates the directory again when it was removed after first use', async () => {
      const nested = join(dir, 'logs');
      const store = new FileLogStore(nested);
      await store.append('myapp', [entry(1)]);
      await rm(nested, { recursive: true });

      await store.append('myapp', [entry(2)]);

      expect(await store.tail('myapp', 10)).toEqual([entry(2)]);
    });

    it('writes to a new file when the open one was deleted behind its back', async () => {
      const store = new FileLogStore(dir);
      await store.append('myapp', [entry(1)]);
      await rm(join(dir, 'myapp.log'));

      await store.append('myapp', [entry(2)]);

      expect(await store.tail('myapp', 10)).toEqual([entry(2)]);
    });

    it('keeps at most maxOpenFiles files open, and an app whose file was closed appends after its lines', async () => {
      const store = new FileLogStore(dir, { maxOpenFiles: 2 });
      const openLogs = async (): Promise<number> => {
        const links = await readdir('/proc/self/fd').then((fds) => Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => ''))));
        return links.filter((target) => target.startsWith(dir)).length;
      };
      for (const app of ['one', 'two', 'three', 'four']) await store.append(app, [entry(1, app)]);
      await store.append('one', [entry(2, 'one again')]);

      expect(await openLogs()).toBeLessThanOrEqual(2);
      expect(await store.tail('one', 10)).toEqual([entry(1, 'one'), entry(2, 'one again')]);
      await store.close();
      expect(await openLogs()).toBe(0);
    });

    it('ignores an append of no entries', async () => {
      const store = new FileLogStore(dir);

      await store.append('myapp', []);

      expect(await readdir(dir)).toEqual([]);
    });
  });

  describe('escaping', () => {
    const awkward = [
      'multi\nline\nmessage',
      'windows\r\nline',
      'tab\there',
      'back\\slash',
      'literal \\n is not a newline',
      'trailing backslash \\',
      '\\\\double\\\\',
      '',
      'héllo ✓ 🚀 — unicode',
      '\n\t\r\\',
    ];

    it('round-trips newlines, carriage returns, tabs and backslashes, one line per entry', async () => {
      const store = new FileLogStore(dir);
      const entries = awkward.map((message, i) => entry(i, message, i === 0 ? 'odd\tsource\nname' : 'svc[api]'));

      await store.append('myapp', entries);

      expect(await store.tail('myapp', 100)).toEqual(entries);
      const text = await readFile(join(dir, 'myapp.log'), 'utf8');
      expect(text.split('\n')).toHaveLength(awkward.length + 1);
      expect(text.split('\n').slice(0, -1).every((line) => line.split('\t').length === 3)).toBe(true);
    });

    it('skips lines it did not write and an unfinished last line', async () => {
      const store = new FileLogStore(dir);
      await store.append('myapp', [entry(1)]);
      await appendFile(join(dir, 'myapp.log'), 'garbage without tabs\nnot-a-date\tx\ty\n');
      await store.append('myapp', [entry(2)]);
      await appendFile(join(dir, 'myapp.log'), '2026-11-21T10:00:09.000Z\tsvc[api]\tunfinish');

      expect(await store.tail('myapp', 10)).toEqual([entry(1), entry(2)]);
    });
  });

  describe('reading backwards', () => {
    it('tails correctly for every n when lines straddle small chunk boundaries, multi-byte characters included', async () => {
      const store = new FileLogStore(dir, { readChunkBytes: 7 });
      const entries = Array.from({ length: 40 }, (_, i) => entry(i, `${'é✓'.repeat(i % 9)}${'x'.repeat((i * 13) % 50)} #${i}`));
      await store.append('myapp', entries);

      for (let n = 1; n <= 45; n++) {
        expect(await store.tail('myapp', n)).toEqual(entries.slice(-n));
      }
    });

    it('tails lines much longer than a read chunk', async () => {
      const store = new FileLogStore(dir);
      const long = (n: number): string => `${String(n).repeat(10)}:${'🚀abc'.repeat(40_000)}`;
      const entries = [entry(1, long(1)), entry(2, 'short'), entry(3, long(3)), entry(4, long(4))];
      await store.append('myapp', entries);

      expect(await store.tail('myapp', 2)).toEqual(entries.slice(-2));
      expect(await store.tail('myapp', 3)).toEqual(entries.slice(-3));
      expect(await store.tail('myapp', 10)).toEqual(entries);
    });

    it('reads only the end of a large file', async () => {
      const store = new FileLogStore(dir, { maxBytesPerApp: 64 * 1024 * 1024 });
      const batch = Array.from({ length: 1000 }, (_, i) => entry(i, `${'m'.repeat(200)} ${i}`));
      for (let i = 0; i < 25; i++) await store.append('myapp', batch);
      const size = (await stat(join(dir, 'myapp.log'))).size;
      let bytesRead = 0;
      // Count every byte read through a file handle while tailing.
      const probe = await open(join(dir, 'myapp.log'), 'r');
      const handlePrototype = Object.getPrototypeOf(probe) as { read: (...args: unknown[]) => Promise<{ bytesRead: number }> };
      await probe.close();
      const realRead = handlePrototype.read;
      jest.spyOn(handlePrototype, 'read').mockImplementation(async function (this: unknown, ...args: unknown[]) {
        const result = await realRead.apply(this, args);
        bytesRead += result.bytesRead;
        return result;
      });

      const tail = await store.tail('myapp', 10);

      expect(size).toBeGreaterThan(5_000_000);
      expect(tail.map((e) => e.message.split(' ')[1])).toEqual(['990', '991', '992', '993', '994', '995', '996', '997', '998', '999']);
      expect(bytesRead).toBeGreaterThan(0);
      expect(bytesRead).toBeLessThanOrEqual(64 * 1024);
    });
  });

  describe('concurrency', () => {
    it('serialises concurrent appends: no lost lines, each batch contiguous, in call order', async () => {
      const store = new FileLogStore(dir, { maxBytesPerApp: 64 * 1024 * 1024 });
      const batches = Array.from({ length: 100 }, (_, b) =>
        Array.from({ length: 5 }, (_, i) => entry(b * 5 + i, `batch ${b} item ${i} ${'z'.repeat((b * 37) % 3000)}`)),
      );

      await Promise.all(batches.map((batch) => store.append('myapp', batch)));

      expect(await store.tail('myapp', 10_000)).toEqual(batches.flat());
    });

    it('gives a concurrent tail a consistent view and keeps other apps independent', async () => {
      const store = new FileLogStore(dir);
      const writes = Array.from({ length: 50 }, (_, i) => store.append(i % 2 === 0 ? 'even' : 'odd', [entry(i)]));
      const tails = Array.from({ length: 10 }, () => store.tail('even', 1000));

      await Promise.all(writes);
      const seen = await Promise.all(tails);

      for (const lines of seen) {
        expect(lines).toEqual(Array.from({ length: lines.length }, (_, k) => entry(k * 2)));
      }
      expect(await store.tail('even', 1000)).toHaveLength(25);
      expect(await store.tail('odd', 1000)).toHaveLength(25);
    });
  });

  describe('rotation', () => {
    const line = (n: number): LogEntry => entry(n, `message number ${String(n).padStart(4, '0')}`);
    const lineBytes = Buffer.byteLength(`${line(0).time.toISOString()}\tmyapp[web.1]\tmessage number 0000\n`);

    it('moves a full file to <app>.log.1 and starts a new one, never growing past the limit', async () => {
      const max = lineBytes * 10;
      const store = new FileLogStore(dir, { maxBytesPerApp: max });

      for (let n = 0; n < 25; n++) await store.append('myapp', [line(n)]);

      expect((await readdir(dir)).sort()).toEqual(['myapp.log', 'myapp.log.1']);
      expect((await stat(join(dir, 'myapp.log'))).size).toBeLessThanOrEqual(max);
      expect((await stat(join(dir, 'myapp.log.1'))).size).toBeLessThanOrEqual(max);
      // Lines 0-19 filled two files: the first rotated file was replaced by the second.
      const rotated = await readFile(join(dir, 'myapp.log.1'), 'utf8');
      expect(rotated).toContain('message number 0010');
      expect(rotated).not.toContain('message number 0009');
    });

    it('tails across the rotated file when the current one has fewer lines', async () => {
      const store = new FileLogStore(dir, { maxBytesPerApp: lineBytes * 10 });
      for (let n = 0; n < 25; n++) await store.append('myapp', [line(n)]);

      expect(await store.tail('myapp', 5)).toEqual([20, 21, 22, 23, 24].map(line));
      expect(await store.tail('myapp', 8)).toEqual([17, 18, 19, 20, 21, 22, 23, 24].map(line));
      expect(await store.tail('myapp', 100)).toEqual(Array.from({ length: 15 }, (_, i) => line(i + 10)));
    });

    it('rotates before a batch that would not fit, and keeps an oversized batch whole', async () => {
      const store = new FileLogStore(dir, { maxBytesPerApp: lineBytes * 3 });
      await store.append('myapp', [line(0), line(1)]);

      await store.append('myapp', [line(2), line(3), line(4), line(5)]);
      await store.append('myapp', [line(6)]);

      expect(await store.tail('myapp', 100)).toEqual([2, 3, 4, 5, 6].map(line));
      expect(await readFile(join(dir, 'myapp.log'), 'utf8')).toContain('message number 0006');
    });
  });

  describe('remove', () => {
    it('deletes both files of the app and nothing else; the app can log again afterwards', async () => {
      const store = new FileLogStore(dir, { maxBytesPerApp: 200 });
      for (let n = 0; n < 10; n++) await store.append('myapp', [entry(n)]);
      await store.append('myapp-2', [entry(1)]);
      expect(await exists(join(dir, 'myapp.log.1'))).toBe(true);

      await store.remove('myapp');

      expect(await readdir(dir)).toEqual(['myapp-2.log']);
      expect(await store.tail('myapp', 10)).toEqual([]);
      await store.append('myapp', [entry(42)]);
      expect(await store.tail('myapp', 10)).toEqual([entry(42)]);
    });

    it('removing an app without logs is fine', async () => {
      const store = new FileLogStore(join(dir, 'never-created'));

      await expect(store.remove('myapp')).resolves.toBeUndefined();
    });
  });

  describe('app names', () => {
    it.each(['../escape', '..', 'a/b', 'My-App', '', '-app', 'app-', 'a--b', 'app.log', 'a b', 'ａpp'])(
      'rejects %j with a plain Error on every operation and writes nothing',
      async (name) => {
        const store = new FileLogStore(join(dir, 'logs'));

        await expect(store.append(name, [entry(1)])).rejects.toThrow(/Invalid app name/);
        await expect(store.tail(name, 1)).rejects.toThrow(/Invalid app name/);
        await expect(store.remove(name)).rejects.toThrow(/Invalid app name/);
        expect(await readdir(dir)).toEqual([]);
      },
    );

    it('accepts DNS-label app ids', async () => {
      const store = new FileLogStore(dir);
      await writeFile(join(dir, 'keep.txt'), 'x');

      await store.append('my-app-2', [entry(1)]);
      await store.append('0', [entry(2)]);

      expect((await readdir(dir)).sort()).toEqual(['0.log', 'keep.txt', 'my-app-2.log']);
    });
  });
});
