import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { constants } from 'node:os';
import { groupMembers, namespaceMembers, procAvailable, readStat } from './proc';
import { sleep } from '@svc/supervisor-node';
import type { SandboxedCommand } from './sandbox';

/** How a process ended: an exit code, or the signal that killed it. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A shell command running as the leader of its own process group. */
export interface ProcessGroup {
  /** The leader's pid, which is also the group id. */
  readonly pid: number;
  /** Resolves when the leader has exited (other members may still run). */
  readonly exited: Promise<ExitStatus>;
  /** The leader's exit status once it has exited, else null. */
  exitStatus(): ExitStatus | null;
  /** Resolves when both output pipes have closed (every process holding them is gone). */
  readonly outputClosed: Promise<void>;
  /** Sends a signal to every process of the group; a group that is gone is no error. */
  signal(signal: NodeJS.Signals): void;
  /** Whether any live process of the group still exists. */
  alive(): Promise<boolean>;
  /** Stops reading the output pipes, for processes that keep them open after the group is gone. */
  detachOutput(): void;
  /** The output pipes as read here (stdout, stderr), to hand over to another reader (output-keeper.ts). */
  readonly outputPipes: readonly Readable[];
  /**
   * The PID namespace every process of a sandboxed group lives in (`pid:[…]`), once known;
   * null for a plain process group.
   */
  namespace(): string | null;
  /** The sandbox's init and PID namespace, once known; null for a plain process group. */
  sandbox(): SandboxInfo | null;
}

/** What to start. */
export interface GroupOptions {
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** Niceness to start with (0: unchanged). */
  nice: number;
  /** Receives output as it arrives; `stream` tells stdout from stderr. */
  onOutput: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
  /**
   * A bubblewrap command line that runs the command in a sandbox with its own PID namespace,
   * instead of `sh -c` here (`command`, `cwd` and `nice` are then already in it). The group
   * is then that namespace: every process in it, whatever its process group or session.
   */
  sandboxed?: SandboxedCommand | null;
}

/** What bubblewrap reports on its info descriptor. */
export interface SandboxInfo {
  /** The namespace's init, as a pid of the controller's namespace. */
  init: number;
  /** The init's start time, which tells it from a later process with the same pid. */
  initStart: string | null;
  namespace: string;
}

/**
 * Starts `sh -c <command>` detached, so that it leads a new process group (and session) that
 * can be signalled as a whole: the shell's children go with it. Resolves once the process
 * exists; rejects when it cannot be started (missing directory or shell).
 */
export function spawnGroup(options: GroupOptions): Promise<ProcessGroup> {
  const sandboxed = options.sandboxed ?? null;
  let file: string;
  let args: string[];
  // Descriptors of bubblewrap: 3 tells the namespace, 4 gives the seccomp filter, 5 holds the
  // sandbox back until its init is in its cgroup (everything it starts is then in it too).
  const seccomp = sandboxed?.seccomp ?? null;
  const cgroupProcs = sandboxed?.cgroupProcs ?? [];
  if (sandboxed !== null) {
    file = sandboxed.file;
    args = ['--info-fd', '3', ...(seccomp !== null ? ['--seccomp', '4'] : []), ...(cgroupProcs.length > 0 ? ['--block-fd', '5'] : []), ...sandboxed.args];
  } else {
    const shell = ['/bin/sh', '-c', options.command];
    [file, ...args] = (options.nice > 0 ? ['nice', '-n', String(options.nice), ...shell] : shell) as [string, ...string[]];
  }
  const child = spawn(file, args, {
    cwd: sandboxed === null ? options.cwd : '/',
    env: options.env,
    detached: true,
    stdio: sandboxed === null ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', 'pipe', seccomp !== null ? 'pipe' : 'ignore', cgroupProcs.length > 0 ? 'pipe' : 'ignore'],
  });
  if (seccomp !== null) {
    const filter = child.stdio[4] as Writable | null;
    // A bubblewrap that failed before reading it closes the pipe: its exit tells why.
    filter?.on('error', () => undefined);
    filter?.end(seccomp);
  }
  const block = cgroupProcs.length > 0 ? ((child.stdio as unknown[])[5] as Writable | null) : null;
  block?.on('error', () => undefined);
  let status: ExitStatus | null = null;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      status = sandboxed === null ? { code, signal } : sandboxedExit(code, signal);
      resolve(status);
    });
  });
  const named = [
    { name: 'stdout' as const, stream: child.stdout },
    { name: 'stderr' as const, stream: child.stderr },
  ];
  const streams = named.flatMap((n) => (n.stream === null ? [] : [n.stream]));
  const outputClosed = Promise.all(streams.map((s) => new Promise<void>((resolve) => s.once('close', () => resolve())))).then(() => undefined);
  for (const { name, stream } of named) {
    if (stream === null) continue;
    stream.on('data', (chunk: Buffer) => options.onOutput(chunk, name));
    // A read error only ends the output; the exit status still arrives.
    stream.on('error', () => undefined);
  }
  let info: SandboxInfo | null = null;
  let entered: Error | null = null;
  const infoRead =
    sandboxed === null
      ? Promise.resolve()
      : readSandboxInfo(child.stdio[3] as Readable | null).then(async (read) => {
          info = read;
          if (block === null) return;
          try {
            if (read === null) throw new Error('bubblewrap told no sandbox process');
            for (const procs of cgroupProcs) await writeFile(procs, String(read.init));
            block.end('go');
          } catch (error) {
            entered = new Error(`the sandbox could not enter its cgroup: ${error instanceof Error ? error.message : String(error)}`);
            signalGroup(child.pid as number, 'SIGKILL');
            if (read !== null) signalProcess(read.init, 'SIGKILL');
          }
        });

  return new Promise<ProcessGroup>((resolve, reject) => {
    // Kept for the child's whole life: an 'error' without a listener would end the controller.
    child.on('error', (error) => {
      if (child.pid === undefined) reject(error);
    });
    child.once('spawn', () => {
      const pid = child.pid as number;
      if (sandboxed === null) {
        resolve({
          pid,
          exited,
          outputClosed,
          exitStatus: () => status,
          signal: (signal) => signalGroup(pid, signal),
          alive: () => groupAlive(pid),
          detachOutput: () => {
            for (const stream of streams) stream.destroy();
          },
          outputPipes: streams,
          namespace: () => null,
          sandbox: () => null,
        });
        return;
      }
      // The namespace is known once bubblewrap has made it (or has failed and exited).
      void infoRead.then(() => {
        if (entered !== null) return reject(entered);
        resolve({
          pid,
          exited,
          outputClosed,
          exitStatus: () => status,
          signal: (signal) => signalSandbox(pid, info, () => status === null, signal),
          alive: () => sandboxAlive(pid, info, () => status === null),
          detachOutput: () => {
            for (const stream of streams) stream.destroy();
          },
          outputPipes: streams,
          namespace: () => info?.namespace ?? null,
          sandbox: () => info,
        });
      });
    });
  });
}

/** Reads bubblewrap's JSON report (the init's pid and the PID namespace); null when there is none. */
function readSandboxInfo(stream: Readable | null): Promise<SandboxInfo | null> {
  if (stream === null) return Promise.resolve(null);
  return new Promise((resolve) => {
    let text = '';
    stream.setEncoding('utf8');
    let done = false;
    const parse = (final: boolean): void => {
      if (done) return;
      let data: Record<string, unknown>;
      try {
        data = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // Not whole yet; a sandbox held back by its block descriptor keeps this one open.
        if (final) {
          done = true;
          resolve(null);
        }
        return;
      }
      done = true;
      const init = data['child-pid'];
      const namespace = data['pid-namespace'];
      if (!Number.isInteger(init) || !Number.isInteger(namespace)) return resolve(null);
      void readStat(init as number).then((stat) =>
        resolve({ init: init as number, initStart: stat?.startTime ?? null, namespace: `pid:[${String(namespace)}]` }),
      );
    };
    stream.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > 64 * 1024) stream.destroy();
      parse(false);
    });
    stream.on('error', () => undefined);
    stream.once('close', () => parse(true));
  });
}

/**
 * bubblewrap exits with the command's code, or 128 plus the signal that killed it: the
 * latter is reported as that signal, as a shell would tell it.
 */
function sandboxedExit(code: number | null, signal: NodeJS.Signals | null): ExitStatus {
  if (code !== null && code > 128 && code < 128 + 32) {
    const name = (Object.entries(constants.signals) as Array<[NodeJS.Signals, number]>).find(([, number]) => number === code - 128)?.[0];
    if (name !== undefined) return { code: null, signal: name };
  }
  return { code, signal };
}

/** Whether the sandbox's init is still the process it was (a pid may be reused once it is gone). */
export async function initAlive(info: SandboxInfo): Promise<boolean> {
  const stat = await readStat(info.init);
  return stat !== null && stat.state !== 'Z' && stat.startTime === info.initStart;
}

/**
 * Signals a sandbox. SIGKILL kills the namespace's init (and bubblewrap), which takes every
 * process of the namespace with it. Any other signal goes to every process of the namespace
 * but its init (which would ignore it) and bubblewrap outside it (which would die of it and
 * take the processes with it before they could finish). Only while the init lives is the
 * namespace this sandbox's: the number of a namespace that has ended is given to new ones.
 */
function signalSandbox(pid: number, info: SandboxInfo | null, running: () => boolean, signal: NodeJS.Signals): void {
  if (signal === 'SIGKILL' || info === null) {
    if (running()) signalGroup(pid, 'SIGKILL');
    if (info !== null) void initAlive(info).then((alive) => alive && signalProcess(info.init, 'SIGKILL'));
    return;
  }
  void (async () => {
    if (!(await initAlive(info))) return;
    const members = await namespaceMembers(info.namespace);
    if (!(await initAlive(info))) return;
    for (const member of members) if (member !== info.init) signalProcess(member, signal);
  })();
}

/**
 * Whether anything of the sandbox lives: bubblewrap exits only once the namespace's init has
 * been collected, and the init ends only once every other process of its namespace is gone.
 */
async function sandboxAlive(pid: number, info: SandboxInfo | null, running: () => boolean): Promise<boolean> {
  if (running()) return true;
  if (info !== null) return initAlive(info);
  return groupAlive(pid);
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}

/** Sends a signal to a whole process group; a group that is gone (or not ours) is no error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left to signal. EPERM: not ours to signal.
  }
}

const canReadProc = procAvailable();

/**
 * Whether any live process of the group exists. Zombies do not count: a member whose parent
 * is gone waits for the system's init to collect it, and some inits never do.
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (!canReadProc) return true;
  return ((await groupMembers(new Set([pgid]))).get(pgid)?.length ?? 0) > 0;
}

/** Waits while `alive()` says something still runs, for at most `ms`; resolves with whether it ended. */
export async function waitWhileAlive(alive: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (await alive()) {
    if (Date.now() >= deadline) return false;
    await sleep(25);
  }
  return true;
}

/**
 * Stops a process group: SIGTERM to every member, up to `graceMs` for them to exit, then
 * SIGKILL to whatever is left. Resolves once the leader has exited and the group is gone.
 */
export async function terminateGroup(group: ProcessGroup, graceMs: number): Promise<void> {
  if (await group.alive()) {
    group.signal('SIGTERM');
    if (!(await waitUntilGone(group, graceMs))) group.signal('SIGKILL');
  }
  await group.exited;
  // Members that outlived the leader are killed outright: nothing of a stopped container stays.
  if (!(await waitUntilGone(group, 2000))) {
    group.signal('SIGKILL');
    await waitUntilGone(group, 2000);
  }
}

/** Waits until nothing of the group is alive or `ms` have passed; resolves with whether it is gone. */
export function waitUntilGone(group: ProcessGroup, ms: number): Promise<boolean> {
  return waitWhileAlive(() => group.alive(), ms);
}

/** The exit code a shell would report: the code, or 128 plus the number of the signal. */
export function exitCodeOf(status: ExitStatus): number {
  if (status.code !== null) return status.code;
  const number = status.signal === null ? undefined : constants.signals[status.signal];
  return 128 + (number ?? 0);
}

/** How a process ended, in words: `exited with code 1`, `was killed by SIGKILL`. */
export function describeExit(status: ExitStatus): string {
  return status.code !== null ? `exited with code ${status.code}` : `was killed by ${status.signal ?? 'a signal'}`;
}

/** Waits for the output of a finished one-off command, then kills anything of it still running. */
export async function drainGroup(group: ProcessGroup): Promise<void> {
  const closed = await Promise.race([group.outputClosed.then(() => true), sleep(500).then(() => false)]);
  if (await group.alive()) {
    group.signal('SIGKILL');
    await waitUntilGone(group, 2000);
  }
  // A process outside the group (it changed its session) may still hold the pipes.
  if (!closed && !(await Promise.race([group.outputClosed.then(() => true), sleep(1000).then(() => false)]))) group.detachOutput();
}
