import { existsSync } from 'node:fs';
import { readFile, readdir, readlink } from 'node:fs/promises';

/** Whether this system has a Linux-style /proc to read process groups and memory from. */
export function procAvailable(): boolean {
  return existsSync('/proc/self/stat');
}

/** What the scheduler needs from `/proc/<pid>/stat`. */
export interface ProcStat {
  pid: number;
  /** The process group id. */
  pgid: number;
  /** Start time in clock ticks since boot: with the pid, identifies one process for good. */
  startTime: string;
  /** `Z` for a zombie. */
  state: string;
}

/** Parses the text of `/proc/<pid>/stat`; null when it is not readable as such. */
export function parseStat(pid: number, text: string): ProcStat | null {
  // The command name (field 2) is in parentheses and may itself contain spaces and parentheses.
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const fields = text.slice(close + 2).trim().split(/\s+/);
  // fields[0] is field 3 (state), fields[2] field 5 (pgrp), fields[19] field 22 (starttime).
  const state = fields[0];
  const pgid = Number(fields[2]);
  const startTime = fields[19];
  if (state === undefined || !Number.isInteger(pgid) || startTime === undefined) return null;
  return { pid, pgid, startTime, state };
}

/** The stat of one process, or null when it does not exist (any more). */
export async function readStat(pid: number): Promise<ProcStat | null> {
  try {
    return parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** Every process on the system whose process group is one of `pgids`, by group. */
export async function groupMembers(pgids: ReadonlySet<number>): Promise<Map<number, number[]>> {
  const members = new Map<number, number[]>();
  if (pgids.size === 0) return members;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return members;
  }
  const stats = await Promise.all(entries.filter((name) => /^[0-9]+$/.test(name)).map((name) => readStat(Number(name))));
  for (const stat of stats) {
    if (stat === null || !pgids.has(stat.pgid) || stat.state === 'Z') continue;
    const list = members.get(stat.pgid) ?? [];
    list.push(stat.pid);
    members.set(stat.pgid, list);
  }
  return members;
}

/** Resident memory of one process in bytes (`VmRSS`); 0 when it is gone or has none. */
export async function residentBytes(pid: number): Promise<number> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  const match = /^VmRSS:\s+([0-9]+)\s+kB/m.exec(text);
  return match ? Number(match[1]) * 1024 : 0;
}

/** The summed resident memory of every process in each of the groups, in bytes. */
export async function groupResidentBytes(pgids: ReadonlySet<number>): Promise<Map<number, number>> {
  const totals = new Map<number, number>();
  const members = await groupMembers(pgids);
  await Promise.all(
    [...members].map(async ([pgid, pids]) => {
      const sizes = await Promise.all(pids.map(residentBytes));
      totals.set(pgid, sizes.reduce((sum, size) => sum + size, 0));
    }),
  );
  return totals;
}

/** The PID namespace of a process (`pid:[4026532180]`), or null when it is gone or unreadable. */
export async function pidNamespace(pid: number): Promise<string | null> {
  try {
    return await readlink(`/proc/${pid}/ns/pid`);
  } catch {
    return null;
  }
}

/** The live (not zombie) processes of a PID namespace, as pids of this one. */
export async function namespaceMembers(namespace: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const pids = entries.filter((name) => /^[0-9]+$/.test(name)).map(Number);
  const members = await Promise.all(
    pids.map(async (pid) => {
      if ((await pidNamespace(pid)) !== namespace) return null;
      const stat = await readStat(pid);
      return stat === null || stat.state === 'Z' ? null : pid;
    }),
  );
  return members.filter((pid): pid is number => pid !== null);
}

/** The live processes whose real user id is `uid`. */
export async function processesOf(uid: number): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const found = await Promise.all(
    entries
      .filter((name) => /^[0-9]+$/.test(name))
      .map(async (name) => {
        try {
          const status = await readFile(`/proc/${name}/status`, 'utf8');
          const real = /^Uid:\s+([0-9]+)/m.exec(status)?.[1];
          const state = /^State:\s+(\S)/m.exec(status)?.[1];
          return Number(real) === uid && state !== 'Z' ? Number(name) : null;
        } catch {
          return null;
        }
      }),
  );
  return found.filter((pid): pid is number => pid !== null);
}

/** The summed resident memory of processes, in bytes. */
export async function residentBytesOf(pids: number[]): Promise<number> {
  const sizes = await Promise.all(pids.map(residentBytes));
  return sizes.reduce((sum, size) => sum + size, 0);
}

/** Every live process by PID namespace, read in one pass over /proc. */
export async function processesByNamespace(): Promise<Map<string, number[]>> {
  const byNamespace = new Map<string, number[]>();
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return byNamespace;
  }
  await Promise.all(
    entries
      .filter((name) => /^[0-9]+$/.test(name))
      .map(async (name) => {
        const pid = Number(name);
        const namespace = await pidNamespace(pid);
        if (namespace === null) return;
        const list = byNamespace.get(namespace) ?? [];
        list.push(pid);
        byNamespace.set(namespace, list);
      }),
  );
  return byNamespace;
}
