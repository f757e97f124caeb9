import { readFile, readlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { readStat } from '@svc/scheduler-process';

/*
 * Who holds a data directory, and whether that holder still runs (ADR 0029). A pid alone says
 * little: pids are reused, and under Docker every controller is pid 1 of a container of its
 * own. A process is told apart for good by its pid with its start time (field 22 of
 * /proc/<pid>/stat), within one boot of one kernel (its boot id) and one PID namespace.
 */

/** What the lock file of a data directory records of its holder. */
export interface HolderRecord {
  /** Random, one per start: tells the holder's lock apart from any other, whatever its pid. */
  token: string;
  pid: number;
  /** Field 22 of `/proc/<pid>/stat` (clock ticks after boot); null without a Linux /proc. */
  startTime: string | null;
  /** `/proc/sys/kernel/random/boot_id`: changes with every boot; null without it. */
  bootId: string | null;
  /** The PID namespace (`/proc/self/ns/pid`, e.g. `pid:[4026531836]`): another one is another container; null without it. */
  pidNamespace: string | null;
  hostname: string;
  /** The API's listening address. */
  host: string;
  /** The controller's ports: as configured until it has bound them, then as bound (null: off). */
  ports: HolderPorts;
  /** When the holder took the lock (ISO 8601). */
  since: string;
}

/** The ports a holder listens on, named in the refusal of another start. */
export interface HolderPorts {
  api: number;
  router: number | null;
  routerTls: number | null;
  git: number | null;
}

/** The process that would take a lock, as the lock file records it. */
export type Identity = Pick<HolderRecord, 'pid' | 'startTime' | 'bootId' | 'pidNamespace' | 'hostname'>;

/** What the judgement asks about another process of this PID namespace. */
export interface ProcessProbe {
  /** The process's start time (field 22 of its stat); null when no such process runs (a zombie does not). */
  startTime(pid: number): Promise<string | null>;
  /** Whether a process with this pid runs, for systems without /proc. */
  exists(pid: number): boolean;
}

/** The judgement of a recorded holder: running, gone, or not to be told from its pid (another PID namespace or machine). */
export type Verdict = { holder: 'live'; why: string } | { holder: 'gone'; why: string } | { holder: 'unknown' };

async function firstLine(path: string): Promise<string | null> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    return text === '' ? null : text;
  } catch {
    return null;
  }
}

/** This process as a lock file records it. */
export async function ownIdentity(): Promise<Identity> {
  const stat = await readStat(process.pid);
  let pidNamespace: string | null = null;
  try {
    pidNamespace = await readlink('/proc/self/ns/pid');
  } catch {
    // No Linux /proc: the holder is judged by its heartbeat, or by its pid on the same host.
  }
  return { pid: process.pid, startTime: stat?.startTime ?? null, bootId: await firstLine('/proc/sys/kernel/random/boot_id'), pidNamespace, hostname: hostname() };
}

/** Processes of this PID namespace, as /proc and signal 0 show them. */
export const systemProbe: ProcessProbe = {
  startTime: async (pid) => {
    const stat = await readStat(pid);
    return stat === null || stat.state === 'Z' || stat.state === 'X' ? null : stat.startTime;
  },
  exists: (pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      // EPERM: it exists, as another user's process.
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  },
};

/**
 * Judges a recorded holder by its process, where its pid means something here: the same boot
 * and the same PID namespace (or, without /proc, the same host name). `heldHere` says whether
 * the token is a lock this very process holds (two servers embedded in one process).
 */
export async function judgeByProcess(record: HolderRecord, self: Identity, probe: ProcessProbe, heldHere: (token: string) => boolean): Promise<Verdict> {
  if (heldHere(record.token)) return { holder: 'live', why: 'this process holds it' };
  const sameKernel = record.bootId !== null && record.bootId === self.bootId;
  const sameNamespace = sameKernel && record.pidNamespace !== null && record.pidNamespace === self.pidNamespace;
  const noProc = record.bootId === null && self.bootId === null && record.pidNamespace === null && self.pidNamespace === null;
  if (sameNamespace) {
    // Our own pid under another token: an earlier process that had our pid (a container started again) is gone.
    if (record.pid === self.pid) return { holder: 'gone', why: `its pid ${record.pid} is now this process's` };
    const startTime = await probe.startTime(record.pid);
    if (startTime === null) return { holder: 'gone', why: `process ${record.pid} is no longer running` };
    if (record.startTime !== null && startTime !== record.startTime) return { holder: 'gone', why: `pid ${record.pid} now belongs to another process` };
    return { holder: 'live', why: `process ${record.pid} is running` };
  }
  if (noProc && record.hostname === self.hostname) {
    if (record.pid === self.pid) return { holder: 'gone', why: `its pid ${record.pid} is now this process's` };
    return probe.exists(record.pid) ? { holder: 'live', why: `process ${record.pid} is running` } : { holder: 'gone', why: `process ${record.pid} is no longer running` };
  }
  // The same host name on another kernel: this machine has booted since.
  if (record.bootId !== null && self.bootId !== null && !sameKernel && record.hostname === self.hostname) {
    return { holder: 'gone', why: 'the machine has restarted since' };
  }
  return { holder: 'unknown' };
}

/** Whether a parsed lock file has every field of a holder record. */
export function isHolderRecord(value: unknown): value is HolderRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  const ports = record.ports as Record<string, unknown> | undefined;
  const nullableString = (field: unknown): boolean => field === null || typeof field === 'string';
  const nullablePort = (field: unknown): boolean => field === null || typeof field === 'number';
  return (
    typeof record.token === 'string' &&
    typeof record.pid === 'number' &&
    nullableString(record.startTime) &&
    nullableString(record.bootId) &&
    nullableString(record.pidNamespace) &&
    typeof record.hostname === 'string' &&
    typeof record.host === 'string' &&
    typeof record.since === 'string' &&
    typeof ports === 'object' &&
    ports !== null &&
    typeof ports.api === 'number' &&
    nullablePort(ports.router) &&
    nullablePort(ports.routerTls) &&
    nullablePort(ports.git)
  );
}
