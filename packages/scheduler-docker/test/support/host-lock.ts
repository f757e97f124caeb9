/// <reference types="jest" />
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, readdir, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/*
 * A lock across the test processes of this machine (jest's workers, and a second `npm test`),
 * for what several test files share and one of them changes: a swarm whose worker one file
 * drains, say. Holders that only count on the thing staying as it is take it shared; a file
 * that changes it takes it exclusive, and waits until every shared holder is done.
 *
 * On disk, a directory per lock under the system's temporary directory: `exclusive` (made with
 * O_EXCL) and one `shared-*` file per shared holder, each holding its process id and what holds
 * it. A holder whose process is gone is stale: its file is removed by the next one to look.
 * An exclusive taker announces itself first, so that new shared takers back off and it is not
 * starved; a shared taker that sees it after writing its own file takes that file back.
 */

const ROOT = join(tmpdir(), 'svc-test-locks');
const POLL_MS = 250;
/** A holder file still empty this long after it was made belongs to a process that died writing it. */
const EMPTY_STALE_MS = 10_000;

export type LockMode = 'shared' | 'exclusive';

/** Who holds a lock: the process, and the test file it runs. */
interface Holder {
  pid: number;
  what: string;
  since: string;
}

/** The directory of a lock, from any name (a swarm manager's socket, say). */
export function lockDirectory(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_.-]+/g, '-').slice(-40);
  return join(ROOT, `${safe}-${createHash('sha256').update(name).digest('hex').slice(0, 12)}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user, alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The holder in a file, or null when the file is gone or stale (its process dead, or empty for
 * too long); a stale file is removed.
 */
async function liveHolder(file: string): Promise<Holder | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return null;
  }
  if (text === '') {
    // Being written: alive, unless it stayed empty.
    const made = await stat(file).then((s) => s.mtimeMs, () => 0);
    if (made !== 0 && Date.now() - made < EMPTY_STALE_MS) return { pid: 0, what: '(starting)', since: '' };
    await unlink(file).catch(() => undefined);
    return null;
  }
  let holder: Holder;
  try {
    holder = JSON.parse(text) as Holder;
  } catch {
    await unlink(file).catch(() => undefined);
    return null;
  }
  if (holder.pid === process.pid || alive(holder.pid)) return holder;
  await unlink(file).catch(() => undefined);
  return null;
}

/** Makes `file` only if it does not exist, with the holder in it; false when it exists. */
async function create(file: string, holder: Holder): Promise<boolean> {
  try {
    const handle = await open(file, 'wx');
    try {
      await handle.writeFile(JSON.stringify(holder));
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

async function sharedHolders(dir: string, except: string | null): Promise<Holder[]> {
  const names = (await readdir(dir)).filter((name) => name.startsWith('shared-') && join(dir, name) !== except);
  const holders = await Promise.all(names.map((name) => liveHolder(join(dir, name))));
  return holders.filter((holder): holder is Holder => holder !== null);
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** The test file running in this process, for the holder's record. */
function currentTestFile(): string {
  try {
    const path = expect.getState().testPath;
    if (path) return basename(path);
  } catch {
    // Outside jest.
  }
  return process.argv[1] ? basename(process.argv[1]) : 'a process';
}

/**
 * Takes the lock `name` in `mode`, waiting as long as `timeoutMs` for its holders; resolves
 * with the function that releases it. A line says who the wait is for, once.
 * @throws Error naming the holders when the lock is not had within `timeoutMs`.
 */
export async function takeLock(name: string, mode: LockMode, timeoutMs: number): Promise<() => Promise<void>> {
  const dir = lockDirectory(name);
  await mkdir(dir, { recursive: true });
  const holder: Holder = { pid: process.pid, what: currentTestFile(), since: new Date().toISOString() };
  const exclusive = join(dir, 'exclusive');
  const deadline = Date.now() + timeoutMs;
  let said = false;
  const waitFor = async (holders: Holder[]): Promise<void> => {
    if (Date.now() > deadline) {
      throw new Error(`the ${mode} lock ${name} was not had within ${timeoutMs} ms: held by ${holders.map((h) => `pid ${h.pid} (${h.what}) since ${h.since}`).join(', ')}`);
    }
    if (!said) {
      said = true;
      process.stdout.write(`${holder.what} waits for the ${mode} lock ${name}, held by ${holders.map((h) => `${h.what} (pid ${h.pid})`).join(', ')}\n`);
    }
    await sleep(POLL_MS);
  };

  if (mode === 'exclusive') {
    for (;;) {
      if (await create(exclusive, holder)) break;
      const current = await liveHolder(exclusive);
      if (current !== null) await waitFor([current]);
    }
    // Announced: no new shared holder comes in; those already in finish first.
    for (;;) {
      const shared = await sharedHolders(dir, null);
      if (shared.length === 0) break;
      try {
        await waitFor(shared);
      } catch (error) {
        await unlink(exclusive).catch(() => undefined);
        throw error;
      }
    }
    return once(() => unlink(exclusive).catch(() => undefined));
  }

  const mine = join(dir, `shared-${process.pid}-${randomBytes(4).toString('hex')}`);
  for (;;) {
    const current = await liveHolder(exclusive);
    if (current !== null) {
      await waitFor([current]);
      continue;
    }
    await create(mine, holder);
    // An exclusive taker that came in meanwhile goes first: take ours back and wait.
    const came = await liveHolder(exclusive);
    if (came === null) break;
    await unlink(mine).catch(() => undefined);
    await waitFor([came]);
  }
  return once(() => unlink(mine).catch(() => undefined));
}

function once(release: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= release());
}

/**
 * Holds the lock `name` for the whole of a test file: call it at the file's top level, outside
 * any describe, so that it is taken before every other hook and given back after every other
 * afterAll (a suite's own clean-up, such as making a drained node active again, runs first).
 * `timeoutMs` bounds the wait (another file may hold it for minutes).
 */
export function holdLockDuringFile(name: string, mode: LockMode, timeoutMs = 30 * 60_000): void {
  let release: (() => Promise<void>) | null = null;
  beforeAll(async () => {
    release = await takeLock(name, mode, timeoutMs);
  }, timeoutMs + 10_000);
  afterAll(async () => {
    await release?.();
  });
}
