import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { judgeByProcess, ownIdentity, systemProbe, type HolderRecord, type Identity, type ProcessProbe } from '../src/data-dir-holder';
import { acquireDataDirLock, DATA_DIR_LOCK_FILE, DataDirLockedError, heldMessage, type DataDirLock, type LockOptions } from '../src/data-dir-lock';
import { PreflightError } from '../src/preflight';

/** Fast timing: a heartbeat every 50 ms, watched for 400 ms. */
const FAST = { heartbeatMs: 50, staleAfterMs: 5000, watchMs: 400, pollMs: 20, giveUpMs: 10_000 };

interface Lines {
  warn: string[];
  error: string[];
}

function options(lines: Lines = { warn: [], error: [] }): LockOptions {
  return {
    host: '127.0.0.1',
    ports: { api: 8000, router: 8080, routerTls: null, git: 2222 },
    logger: { warn: (_obj, msg) => void lines.warn.push(msg), error: (_obj, msg) => void lines.error.push(msg) },
    timing: FAST,
  };
}

let dir: string;
let self: Identity;
const held: DataDirLock[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  self = await ownIdentity();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-lock-'));
});

afterEach(async () => {
  for (const lock of held.splice(0)) await lock.release();
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

async function take(extra: Partial<LockOptions> = {}, lines?: Lines): Promise<DataDirLock> {
  const lock = await acquireDataDirLock(dir, { ...options(lines), ...extra });
  held.push(lock);
  return lock;
}

/** A lock file as another controller would have left it: by default one of this machine and namespace. */
async function leaveLock(fields: Partial<HolderRecord>, ageMs = 0): Promise<HolderRecord> {
  const record: HolderRecord = {
    token: 'f'.repeat(32),
    ...self,
    pid: 999_999,
    host: '10.0.0.5',
    ports: { api: 9000, router: 9080, routerTls: null, git: null },
    since: '2025-01-02T03:04:05.000Z',
    ...fields,
  };
  const file = join(dir, DATA_DIR_LOCK_FILE);
  await writeFile(file, JSON.stringify(record));
  const when = new Date(Date.now() - ageMs);
  await utimes(file, when, when);
  return record;
}

async function lockFile(): Promise<HolderRecord> {
  return JSON.parse(await readFile(join(dir, DATA_DIR_LOCK_FILE), 'utf8')) as HolderRecord;
}

/** A process that runs until the test ends. */
function sleeper(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => undefined, 60000)'], { stdio: 'ignore' });
  children.push(child);
  return child;
}

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid as number;
}

describe('taking the lock of a data directory', () => {
  it('on a free directory: writes who holds it (pid, start time, boot id, namespace, host, ports, token) and leaves no other file', async () => {
    const lock = await take();

    const record = await lockFile();
    expect(record).toEqual({ ...self, token: expect.stringMatching(/^[0-9a-f]{32}$/), host: '127.0.0.1', ports: { api: 8000, router: 8080, routerTls: null, git: 2222 }, since: expect.any(String) });
    expect(record.token).toBe(lock.record.token);
    if (process.platform === 'linux') {
      expect(record.startTime).toMatch(/^[0-9]+$/);
      expect(record.bootId).toMatch(/^[0-9a-f-]{36}$/);
      expect(record.pidNamespace).toMatch(/^pid:\[[0-9]+\]$/);
    }
    expect(await readdir(dir)).toEqual([DATA_DIR_LOCK_FILE]);
  });

  it('release removes it, and takes nothing that is not its own', async () => {
    const lock = await take();
    await lock.release();
    expect(await readdir(dir)).toEqual([]);

    const again = await take();
    await leaveLock({ token: 'c'.repeat(32) });
    await again.release();
    expect((await lockFile()).token).toBe('c'.repeat(32));
  });

  it('refuses a second start while the holder lives, naming it and what to do, and changes nothing', async () => {
    const first = await take();
    await first.update({ api: 41234, router: 41235, routerTls: null, git: null });
    const before = await readFile(join(dir, DATA_DIR_LOCK_FILE), 'utf8');

    const refused = acquireDataDirLock(dir, options());
    await expect(refused).rejects.toBeInstanceOf(DataDirLockedError);
    await expect(refused).rejects.toThrow(
      `DATA_DIR: ${dir} is in use by another controller (pid ${process.pid} on host ${self.hostname}, API 127.0.0.1:41234, router port 41235, since ${first.record.since}; this process holds it): ` +
        "stop that controller first, or set DATA_DIR to a directory of this controller's own (each controller process needs its own, also when several share a PostgreSQL database)",
    );
    expect(await readFile(join(dir, DATA_DIR_LOCK_FILE), 'utf8')).toBe(before);
    expect(await readdir(dir)).toEqual([DATA_DIR_LOCK_FILE]);
  });

  it('refuses while another live process of this machine holds it', async () => {
    const child = sleeper();
    await new Promise((resolve) => child.once('spawn', resolve));
    const startTime = await systemProbe.startTime(child.pid as number);
    await leaveLock({ pid: child.pid as number, startTime });

    await expect(acquireDataDirLock(dir, options())).rejects.toThrow(`(pid ${child.pid} on host ${self.hostname}, API 10.0.0.5:9000, router port 9080, since 2025-01-02T03:04:05.000Z; process ${child.pid} is running)`);
  });

  it('is a preflight error on DATA_DIR when the directory cannot be written', async () => {
    await writeFile(join(dir, 'file'), '');
    const error = await acquireDataDirLock(join(dir, 'file', 'data'), options()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PreflightError);
    expect((error as PreflightError).setting).toBe('DATA_DIR');
    expect((error as Error).message).toMatch(/^DATA_DIR: cannot write the lock file in .*file\/data \(ENOTDIR.*\): make .* a directory this controller's user may write$/);
  });
});

describe('a stale lock does not block the next start', () => {
  it('whose pid is dead: taken over, with a warning', async () => {
    const lines: Lines = { warn: [], error: [] };
    const pid = await deadPid();
    await leaveLock({ pid });

    const lock = await take({}, lines);

    expect((await lockFile()).token).toBe(lock.record.token);
    expect(lines.warn).toEqual([`took over the lock of ${dir}: the controller that held it is gone (process ${pid} is no longer running)`]);
  });

  it('whose pid now belongs to another process (another start time)', async () => {
    const child = sleeper();
    await new Promise((resolve) => child.once('spawn', resolve));
    const lines: Lines = { warn: [], error: [] };
    await leaveLock({ pid: child.pid as number, startTime: '1' });

    await take({}, lines);

    expect(lines.warn[0]).toMatch(`(pid ${child.pid} now belongs to another process)`);
  });

  it('whose pid is this process under another token (a container started again as pid 1)', async () => {
    const lines: Lines = { warn: [], error: [] };
    await leaveLock({ pid: process.pid });

    await take({}, lines);

    expect(lines.warn[0]).toMatch(`(its pid ${process.pid} is now this process's)`);
  });

  it('of another boot of this machine (another boot id, the same host name)', async () => {
    const lines: Lines = { warn: [], error: [] };
    const child = sleeper();
    await new Promise((resolve) => child.once('spawn', resolve));
    // A pid that runs here: only the boot id tells it is not the same process.
    await leaveLock({ pid: child.pid as number, bootId: '00000000-0000-0000-0000-000000000000' });

    await take({}, lines);

    expect(lines.warn[0]).toMatch('(the machine has restarted since)');
  });

  it('of another PID namespace whose heartbeat is older than staleAfterMs: at once', async () => {
    const lines: Lines = { warn: [], error: [] };
    await leaveLock({ pid: 1, pidNamespace: 'pid:[1]' }, 60_000);

    const started = Date.now();
    await take({}, lines);

    expect(Date.now() - started).toBeLessThan(FAST.watchMs);
    expect(lines.warn[0]).toMatch(/\(its heartbeat stopped (59|60|61) s ago\)$/);
  });

  it('of another PID namespace whose recent heartbeat does not move: once watched for watchMs', async () => {
    const lines: Lines = { warn: [], error: [] };
    await leaveLock({ pid: 1, pidNamespace: 'pid:[1]', hostname: 'another-container' });

    const started = Date.now();
    await take({}, lines);

    expect(Date.now() - started).toBeGreaterThanOrEqual(FAST.watchMs);
    expect(lines.warn[0]).toMatch('(its heartbeat did not move for 0.4 s)');
  });

  it('that is no record at all (garbage), once its heartbeat is stale', async () => {
    await writeFile(join(dir, DATA_DIR_LOCK_FILE), 'not json');
    const old = new Date(Date.now() - 60_000);
    await utimes(join(dir, DATA_DIR_LOCK_FILE), old, old);

    const lock = await take();

    expect((await lockFile()).token).toBe(lock.record.token);
  });

  it('left with the marker of a starter that died taking it over', async () => {
    const stale = await leaveLock({ pid: await deadPid() });
    await writeFile(join(dir, `${DATA_DIR_LOCK_FILE}.takeover-${stale.token}`), JSON.stringify({ ...stale, token: 'e'.repeat(32), pid: await deadPid() }));

    const lock = await take();

    expect((await lockFile()).token).toBe(lock.record.token);
    expect(await readdir(dir)).toEqual([DATA_DIR_LOCK_FILE]);
  });
});

describe('a holder in another PID namespace (another container) is judged by its heartbeat', () => {
  it('refused while it touches the file', async () => {
    await leaveLock({ pid: 1, pidNamespace: 'pid:[1]', hostname: 'controller-container' });
    const file = join(dir, DATA_DIR_LOCK_FILE);
    const beating = setInterval(() => {
      const now = new Date();
      void utimes(file, now, now).catch(() => undefined);
    }, 30);
    try {
      await expect(acquireDataDirLock(dir, options())).rejects.toThrow(
        '(pid 1 on host controller-container, API 10.0.0.5:9000, router port 9080, since 2025-01-02T03:04:05.000Z; its heartbeat goes on (it runs in another container or on another machine))',
      );
    } finally {
      clearInterval(beating);
    }
  });

  it('the holder keeps its own heartbeat going, and stops it on release', async () => {
    const lock = await take();
    const file = join(dir, DATA_DIR_LOCK_FILE);
    const first = (await stat(file)).mtimeMs;
    await new Promise((resolve) => setTimeout(resolve, FAST.heartbeatMs * 4));
    expect((await stat(file)).mtimeMs).toBeGreaterThan(first);


    await lock.release();
    await new Promise((resolve) => setTimeout(resolve, FAST.heartbeatMs * 2));
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  });

  it('the holder says so when its lock was taken from it', async () => {
    const lines: Lines = { warn: [], error: [] };
    await take({}, lines);
    await leaveLock({ token: 'd'.repeat(32) });
    await new Promise((resolve) => setTimeout(resolve, FAST.heartbeatMs * 3));

    expect(lines.error).toEqual([
      `the lock file ${join(dir, DATA_DIR_LOCK_FILE)} was removed or taken by another controller while this one runs: two controllers may now use one data directory; stop one of them`,
    ]);
    expect((await lockFile()).token).toBe('d'.repeat(32));
  });
});

describe('two starts at the same moment', () => {
  const settle = async (count: number): Promise<{ won: DataDirLock[]; refused: unknown[] }> => {
    const outcomes = await Promise.allSettled(Array.from({ length: count }, () => acquireDataDirLock(dir, options())));
    const won = outcomes.filter((o): o is PromiseFulfilledResult<DataDirLock> => o.status === 'fulfilled').map((o) => o.value);
    held.push(...won);
    return { won, refused: outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason as unknown) };
  };

  it('on a free directory: exactly one takes it, the others are refused', async () => {
    const { won, refused } = await settle(8);

    expect(won).toHaveLength(1);
    expect(refused).toHaveLength(7);
    for (const reason of refused) expect(reason).toBeInstanceOf(DataDirLockedError);
    expect((await lockFile()).token).toBe(won[0]?.record.token);
    expect(await readdir(dir)).toEqual([DATA_DIR_LOCK_FILE]);
  });

  it('on a stale lock: exactly one takes it over', async () => {
    await leaveLock({ pid: await deadPid() });

    const { won, refused } = await settle(8);

    expect(won).toHaveLength(1);
    expect(refused).toHaveLength(7);
    for (const reason of refused) expect(reason).toBeInstanceOf(DataDirLockedError);
    expect((await lockFile()).token).toBe(won[0]?.record.token);
  });
});

describe('judging a recorded holder by its process', () => {
  const record = (fields: Partial<HolderRecord>): HolderRecord => ({
    token: 't',
    pid: 42,
    startTime: '1000',
    bootId: 'boot-a',
    pidNamespace: 'pid:[1]',
    hostname: 'h',
    host: '0.0.0.0',
    ports: { api: 8000, router: null, routerTls: null, git: null },
    since: '2025-01-01T00:00:00.000Z',
    ...fields,
  });
  const me: Identity = { pid: 7, startTime: '5', bootId: 'boot-a', pidNamespace: 'pid:[1]', hostname: 'h' };
  const probe = (running: Record<number, string>): ProcessProbe => ({ startTime: async (pid) => running[pid] ?? null, exists: (pid) => pid in running });
  const none = (): boolean => false;

  it('live: its pid runs with its start time; or its token is held in this process', async () => {
    expect(await judgeByProcess(record({}), me, probe({ 42: '1000' }), none)).toEqual({ holder: 'live', why: 'process 42 is running' });
    expect(await judgeByProcess(record({ pid: 7 }), me, probe({}), (token) => token === 't')).toEqual({ holder: 'live', why: 'this process holds it' });
  });

  it('gone: dead pid, another start time, our own pid, another boot of the same host', async () => {
    expect((await judgeByProcess(record({}), me, probe({}), none)).holder).toBe('gone');
    expect((await judgeByProcess(record({}), me, probe({ 42: '999' }), none)).holder).toBe('gone');
    expect((await judgeByProcess(record({ pid: 7 }), me, probe({ 7: '5' }), none)).holder).toBe('gone');
    expect((await judgeByProcess(record({ bootId: 'boot-b' }), me, probe({ 42: '1000' }), none)).holder).toBe('gone');
  });

  it('unknown (left to the heartbeat): another PID namespace, or another host on another boot', async () => {
    expect(await judgeByProcess(record({ pidNamespace: 'pid:[2]' }), me, probe({ 42: '1000' }), none)).toEqual({ holder: 'unknown' });
    expect(await judgeByProcess(record({ pidNamespace: 'pid:[2]', pid: 7 }), me, probe({}), none)).toEqual({ holder: 'unknown' });
    expect(await judgeByProcess(record({ bootId: 'boot-b', hostname: 'other' }), me, probe({}), none)).toEqual({ holder: 'unknown' });
  });

  it('without /proc on either side: by the pid alone on the same host', async () => {
    const bare: Identity = { ...me, startTime: null, bootId: null, pidNamespace: null };
    const old = record({ startTime: null, bootId: null, pidNamespace: null });
    expect((await judgeByProcess(old, bare, probe({ 42: '' }), none)).holder).toBe('live');
    expect((await judgeByProcess(old, bare, probe({}), none)).holder).toBe('gone');
    expect((await judgeByProcess({ ...old, hostname: 'other' }, bare, probe({ 42: '' }), none)).holder).toBe('unknown');
  });

  it('the refusal of a lock file that cannot be read says so', () => {
    expect(heldMessage('/data', null, 'its heartbeat goes on')).toMatch(/^DATA_DIR: \/data is in use by another controller \(its lock file cannot be read; its heartbeat goes on\): stop that controller first/);
  });
});
