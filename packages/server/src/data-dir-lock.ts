import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PreflightError } from './preflight';
import { isHolderRecord, judgeByProcess, ownIdentity, systemProbe, type HolderPorts, type HolderRecord, type Identity, type ProcessProbe, type Verdict } from './data-dir-holder';

/*
 * One controller per data directory (ADR 0029). A controller holds `DATA_DIR/controller.lock`
 * from before it touches any process, container, file or firewall rule until it has stopped:
 * another one started on the same directory would take the first one's apps for leftovers.
 * The file is made atomically (a hard link of a file already written, so that nobody reads
 * it half-written); the holder touches it every few seconds (its heartbeat) and removes it
 * when it stops. A lock whose holder is gone is taken over, by one starter only.
 */

/** The lock file in DATA_DIR. */
export const DATA_DIR_LOCK_FILE = 'controller.lock';

/** How often the holder touches its lock, and how a holder of another PID namespace is judged by it. */
export interface LockTiming {
  /** How often the holder touches the lock file. */
  heartbeatMs: number;
  /** A heartbeat older than this is a holder gone, at once. */
  staleAfterMs: number;
  /** A younger one is watched this long: a live holder touches the file meanwhile. */
  watchMs: number;
  /** How often the watched file is looked at. */
  pollMs: number;
  /** A start that could not take the lock within this time (others kept changing it) gives up. */
  giveUpMs: number;
}

/** The timing of the bundled server. */
export const LOCK_TIMING: LockTiming = { heartbeatMs: 2000, staleAfterMs: 30_000, watchMs: 7000, pollMs: 250, giveUpMs: 60_000 };

/** Files the lock protocol leaves only when a process died inside it go after this long. */
const LEFTOVER_AGE_MS = 10 * 60_000;

/** Where the lock writes what the operator should know. */
export interface LockLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What a start records of itself in the lock; identity, probe and timing are for tests. */
export interface LockOptions {
  /** The API's listening address. */
  host: string;
  /** The ports as configured (0: any free one); `update` records them as bound. */
  ports: HolderPorts;
  logger: LockLogger;
  timing?: Partial<LockTiming>;
  identity?: Identity;
  probe?: ProcessProbe;
}

/** A data directory this process holds. */
export interface DataDirLock {
  /** The lock file. */
  readonly file: string;
  /** What the lock file says of this holder. */
  readonly record: HolderRecord;
  /** Records the ports as bound, for the message another start on this directory gets. */
  update(ports: HolderPorts): Promise<void>;
  /** Stops the heartbeat and removes the lock file if it is still this holder's (idempotent). */
  release(): Promise<void>;
}

/** A start refused because another live controller holds its data directory. */
export class DataDirLockedError extends PreflightError {
  constructor(
    readonly dataDir: string,
    /** What the lock file says of the holder; null when it cannot be read. */
    readonly holder: HolderRecord | null,
    why: string,
  ) {
    super('DATA_DIR', heldMessage(dataDir, holder, why));
    this.name = 'DataDirLockedError';
  }
}

/** The one line a start on a held data directory stops with: the holder, and what to do. */
export function heldMessage(dataDir: string, holder: HolderRecord | null, why: string): string {
  const who = holder === null ? 'its lock file cannot be read' : `pid ${holder.pid} on host ${holder.hostname}, ${portsText(holder)}, since ${holder.since}`;
  return (
    `DATA_DIR: ${dataDir} is in use by another controller (${who}; ${why}): stop that controller first, or set DATA_DIR to a directory of this controller's own ` +
    '(each controller process needs its own, also when several share a PostgreSQL database)'
  );
}

function portsText(holder: HolderRecord): string {
  const { api, router, routerTls, git } = holder.ports;
  return [`API ${holder.host.includes(':') ? `[${holder.host}]` : holder.host}:${api}`, router === null ? null : `router port ${router}`, routerTls === null ? null : `router TLS port ${routerTls}`, git === null ? null : `git port ${git}`]
    .filter((part): part is string => part !== null)
    .join(', ');
}

/**
 * The tokens of the locks this process holds or is taking (several servers may be embedded in
 * one process): a token is here before its lock file can be seen, so that a start of this
 * process never takes another's lock for that of an earlier process with its pid.
 */
const heldHere = new Set<string>();
const isHeldHere = (token: string): boolean => heldHere.has(token);

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException | null)?.code ?? '';
}

/** What a path holds: nothing, a holder's record, or a file that is not one; with its inode and heartbeat. */
type Current = { kind: 'absent' } | { kind: 'record'; record: HolderRecord; ino: number; mtimeMs: number } | { kind: 'unreadable'; ino: number; mtimeMs: number };

async function readCurrent(path: string): Promise<Current> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { kind: 'absent' };
    throw error;
  }
  try {
    const info = await handle.stat();
    const text = await handle.readFile('utf8');
    try {
      const parsed: unknown = JSON.parse(text);
      if (isHolderRecord(parsed)) return { kind: 'record', record: parsed, ino: info.ino, mtimeMs: info.mtimeMs };
    } catch {
      // Not a record: judged by its heartbeat like a holder of another namespace.
    }
    return { kind: 'unreadable', ino: info.ino, mtimeMs: info.mtimeMs };
  } finally {
    await handle.close();
  }
}

/** What tells one lock from the next: its holder's token, or for a file that is no record, its inode and time. */
function keyOf(current: Current): string | null {
  if (current.kind === 'absent') return null;
  return current.kind === 'record' ? current.record.token : `i${current.ino}-${Math.trunc(current.mtimeMs)}`;
}

/**
 * Makes `target` the file `source` is, unless `target` exists (false then), in one step: a
 * hard link of a file written in full. Where the file system has no hard links, an exclusive
 * create, which others may read empty for an instant (an unreadable lock is watched, not taken).
 */
async function createExclusive(source: string, target: string, content: string): Promise<boolean> {
  try {
    await link(source, target);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST') return false;
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(code)) throw error;
  }
  try {
    await writeFile(target, content, { flag: 'wx' });
    return true;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  }
}

type Judgement = Verdict | { holder: 'changed' };

/**
 * A holder that cannot be told by its pid (another container or machine) is live while its
 * heartbeat goes on: gone at once when the file is older than `staleAfterMs`, else once it has
 * not moved for `watchMs`. `changed`: the file was replaced meanwhile (read it again).
 */
async function judgeByHeartbeat(file: string, seen: { ino: number; mtimeMs: number }, timing: LockTiming): Promise<Judgement> {
  const age = Date.now() - seen.mtimeMs;
  if (age > timing.staleAfterMs) return { holder: 'gone', why: `its heartbeat stopped ${Math.round(age / 1000)} s ago` };
  const deadline = Date.now() + timing.watchMs;
  while (Date.now() < deadline) {
    await sleep(timing.pollMs);
    const now = await stat(file).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    });
    if (now === null || now.ino !== seen.ino) return { holder: 'changed' };
    if (now.mtimeMs !== seen.mtimeMs) return { holder: 'live', why: 'its heartbeat goes on (it runs in another container or on another machine)' };
  }
  return { holder: 'gone', why: `its heartbeat did not move for ${timing.watchMs / 1000} s` };
}

/** Whether the lock file's holder runs: by its process where its pid means something here, else by its heartbeat. */
async function judge(file: string, current: Exclude<Current, { kind: 'absent' }>, self: Identity, probe: ProcessProbe, timing: LockTiming): Promise<Judgement> {
  if (current.kind === 'record') {
    const verdict = await judgeByProcess(current.record, self, probe, isHeldHere);
    if (verdict.holder !== 'unknown') return verdict;
  }
  return judgeByHeartbeat(file, current, timing);
}

/** Removes a takeover's marker left by a starter that died holding it (it holds one for an instant). */
async function clearBreaker(breaker: string, token: string, self: Identity, probe: ProcessProbe, timing: LockTiming): Promise<void> {
  const current = await readCurrent(breaker);
  if (current.kind === 'absent') return;
  const verdict = current.kind === 'record' ? await judgeByProcess(current.record, self, probe, isHeldHere) : ({ holder: 'unknown' } as const);
  const gone = verdict.holder === 'gone' || (verdict.holder === 'unknown' && Date.now() - current.mtimeMs > timing.staleAfterMs);
  if (!gone) {
    await sleep(timing.pollMs);
    return;
  }
  // Moved aside first: only one remover gets it; one that got a newer marker puts it back.
  const aside = `${breaker}.${token}.gone`;
  try {
    await rename(breaker, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (keyOf(await readCurrent(aside)) !== keyOf(current)) await link(aside, breaker).catch(() => undefined);
  await rm(aside, { force: true });
}

/**
 * Replaces the lock of a holder that is gone with ours, unless another starter does first: the
 * one that makes `<lock>.takeover-<its key>` (atomically) replaces it, after checking that the
 * lock is still that holder's. True when the lock is now ours.
 */
async function takeOver(file: string, temp: string, content: string, stale: string, record: HolderRecord, self: Identity, probe: ProcessProbe, timing: LockTiming): Promise<boolean> {
  const breaker = `${file}.takeover-${stale}`;
  if (!(await createExclusive(temp, breaker, content))) {
    await clearBreaker(breaker, record.token, self, probe, timing);
    return false;
  }
  if (keyOf(await readCurrent(file)) !== stale) {
    await rm(breaker, { force: true });
    return false;
  }
  try {
    await rename(breaker, file);
  } catch (error) {
    // Our marker was taken for a dead one's: start again.
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
  return keyOf(await readCurrent(file)) === record.token;
}

/** What the lock protocol left of starters that died inside it (temporary files, markers), long after. */
async function removeLeftovers(file: string): Promise<void> {
  const directory = dirname(file);
  const prefix = `${basename(file)}.`;
  const names = (await readdir(directory).catch(() => [] as string[])).filter((name) => name.startsWith(prefix));
  for (const name of names) {
    const info = await stat(join(directory, name)).catch(() => null);
    if (info !== null && Date.now() - info.mtimeMs > LEFTOVER_AGE_MS) await rm(join(directory, name), { force: true });
  }
}

function serialize(record: HolderRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** The lock held: the heartbeat runs until it is released. */
function holding(file: string, first: HolderRecord, timing: LockTiming, logger: LockLogger): DataDirLock {
  let record = first;
  let released: Promise<void> | null = null;
  const ours = async (): Promise<boolean> => {
    const current = await readCurrent(file);
    return current.kind === 'record' && current.record.token === first.token;
  };
  const beat = async (): Promise<void> => {
    if (!(await ours())) {
      clearInterval(heartbeat);
      logger.error(
        { lockFile: file },
        `the lock file ${file} was removed or taken by another controller while this one runs: two controllers may now use one data directory; stop one of them`,
      );
      return;
    }
    const now = new Date();
    await utimes(file, now, now);
  };
  const heartbeat = setInterval(() => void beat().catch(() => undefined), timing.heartbeatMs);
  heartbeat.unref();
  return {
    file,
    get record() {
      return record;
    },
    update: async (ports) => {
      if (released !== null) return;
      record = { ...record, ports };
      const temp = `${file}.${first.token}.new`;
      await writeFile(temp, serialize(record));
      try {
        if (await ours()) await rename(temp, file);
      } finally {
        await rm(temp, { force: true });
      }
    },
    release: () => {
      released ??= (async () => {
        clearInterval(heartbeat);
        heldHere.delete(first.token);
        if (await ours().catch(() => false)) await rm(file, { force: true });
      })();
      return released;
    },
  };
}

/** A data directory the lock cannot be written in: the message names the file and the fix. */
function unwritable(dataDir: string, error: unknown): PreflightError {
  const detail = typeof (error as Error | null)?.message === 'string' ? (error as Error).message : String(error);
  return new PreflightError('DATA_DIR', `DATA_DIR: cannot write the lock file in ${dataDir} (${detail}): make ${dataDir} a directory this controller's user may write`);
}

/**
 * Takes the lock of `dataDir`, making the directory if need be.
 * @throws DataDirLockedError when another live controller holds it.
 * @throws PreflightError when the directory cannot be written, or others kept changing the lock for `giveUpMs`.
 */
export async function acquireDataDirLock(dataDir: string, options: LockOptions): Promise<DataDirLock> {
  const timing: LockTiming = { ...LOCK_TIMING, ...options.timing };
  const self = options.identity ?? (await ownIdentity());
  const probe = options.probe ?? systemProbe;
  const file = join(dataDir, DATA_DIR_LOCK_FILE);
  const record: HolderRecord = { token: randomBytes(16).toString('hex'), ...self, host: options.host, ports: options.ports, since: new Date().toISOString() };
  const content = serialize(record);
  const temp = `${file}.${record.token}.new`;
  try {
    await mkdir(dataDir, { recursive: true });
    await writeFile(temp, content, { flag: 'wx' });
  } catch (error) {
    throw unwritable(dataDir, error);
  }
  heldHere.add(record.token);
  try {
    const deadline = Date.now() + timing.giveUpMs;
    for (;;) {
      if (Date.now() > deadline) {
        throw new PreflightError('DATA_DIR', `DATA_DIR: could not take the lock file ${file} within ${Math.round(timing.giveUpMs / 1000)} s: other controllers kept changing it; start one controller at a time on ${dataDir}`);
      }
      if (await createExclusive(temp, file, content)) break;
      const current = await readCurrent(file);
      if (current.kind === 'absent') continue;
      const verdict = await judge(file, current, self, probe, timing);
      if (verdict.holder === 'live') throw new DataDirLockedError(dataDir, current.kind === 'record' ? current.record : null, verdict.why);
      if (verdict.holder === 'gone' && (await takeOver(file, temp, content, keyOf(current) as string, record, self, probe, timing))) {
        const previous = current.kind === 'record' ? current.record : null;
        options.logger.warn(
          { dataDir, previous: previous === null ? null : { pid: previous.pid, hostname: previous.hostname, since: previous.since } },
          `took over the lock of ${dataDir}: the controller that held it is gone (${verdict.why})`,
        );
        break;
      }
    }
  } catch (error) {
    heldHere.delete(record.token);
    if (error instanceof PreflightError) throw error;
    throw unwritable(dataDir, error);
  } finally {
    await rm(temp, { force: true });
  }
  await removeLeftovers(file).catch(() => undefined);
  return holding(file, record, timing, options.logger);
}
