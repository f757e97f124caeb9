import { execFile } from 'node:child_process';
import { existsSync, lstatSync, type Stats, mkdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { lchown, lstat, readdir } from 'node:fs/promises';
import { delimiter, join, posix } from 'node:path';
import { memoryLimitBytes, type BuildDestination } from '@svc/core';
import { CgroupTree, type CgroupLimits } from './cgroups';
import { userNamespaceFilter } from './seccomp';

/** A range of user ids, both ends included. */
export interface UidRange {
  from: number;
  to: number;
}

/** How apps are confined; every field has a default. */
export interface SandboxOptions {
  /** The user ids handed to apps, one per app, both ends included. Default 200000-265535. */
  uidRange?: UidRange;
  /** The most processes (and threads) all processes of one app may have at once (RLIMIT_NPROC of its uid). Default 512. */
  maxProcesses?: number;
  /** The most open files of one process (RLIMIT_NOFILE). Default 1024. */
  maxOpenFiles?: number;
  /** The largest file a process may write, in bytes (RLIMIT_FSIZE). Default 1 GiB. */
  maxFileBytes?: number;
  /** The size of each process's private `/tmp` (memory), in bytes. Default 64 MiB. */
  tmpBytes?: number;
  /** Host directories shown read-only to apps besides the system's (`/usr`, ...), e.g. a language runtime in /opt. */
  readOnlyPaths?: string[];
  /** The bubblewrap program. Default: `bwrap` found in PATH (or /usr/bin/bwrap). */
  bwrap?: string;
  /** The memory limit of a process whose app sets none, e.g. `1G`; null for none. Default `1G`. */
  defaultMemory?: string | null;
  /** The CPU limit (1024 = one CPU) of a process whose app sets none; null for none. Default 1024. */
  defaultCpu?: number | null;
  /**
   * The group id that marks a build's processes (a supplementary group of each build step, which
   * the build network rules match); no file may belong to it. Default: the uid range's first id minus 1.
   */
  buildGroup?: number;
  /**
   * What build steps may reach besides the internet (the operator's `BUILD_NETWORK_ALLOW`):
   * accepted before this machine's addresses and the private ranges are refused. Default none.
   */
  buildAllowed?: readonly BuildDestination[];
}

export const DEFAULT_UID_RANGE: UidRange = { from: 200000, to: 265535 };

/** Files of `/etc` an ordinary program may need: libraries, certificates, name resolution, time zone. Never secrets. */
const ETC_FILES = [
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'resolv.conf',
  'hosts',
  'host.conf',
  'nsswitch.conf',
  'gai.conf',
  'services',
  'protocols',
  'localtime',
  'timezone',
  'mime.types',
];

/** System directories shown read-only; on merged-/usr systems most are symbolic links into /usr. */
const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Programs run inside the sandbox, by absolute path (the sandbox's PATH is the app's). */
const PRLIMIT = '/usr/bin/prlimit';
const SETPRIV = '/usr/bin/setpriv';
const NICE = '/usr/bin/nice';
const BASH = '/bin/bash';

/**
 * Run by bash as the app's user, last before the app's command: closes every descriptor but
 * 0, 1 and 2, whatever the controller's parent left open without close-on-exec. `-p` keeps
 * the app's environment from running code first (BASH_ENV, functions, SHELLOPTS).
 */
const CLOSE_DESCRIPTORS = 'for f in /proc/$$/fd/*; do fd=${f##*/}; if [ "$fd" -gt 2 ] && [ -e "$f" ]; then exec {fd}>&-; fi; done; exec /bin/sh -c "$1"';

/** Where an app's files appear inside its sandbox, and its working directory and HOME. */
export const APP_MOUNT = '/app';

/** The PATH of sandboxed processes: the system's directories, all of which they can see. */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What to run for one process of an app. */
export interface SandboxedCommand {
  file: string;
  args: string[];
  /** The seccomp filter bubblewrap loads before the command starts (no user namespaces), or null. */
  seccomp: Buffer | null;
  /** The `cgroup.procs` files the sandbox's processes are put in before the command starts. */
  cgroupProcs: string[];
}

/** A host directory shown inside a sandbox besides the app's own. */
export interface SandboxBind {
  host: string;
  /** Where it appears inside. */
  path: string;
  writable: boolean;
}

/** What `Sandbox.command` runs, and how. */
export interface SandboxCommandOptions {
  app: string;
  uid: number;
  /** Shown read-write as /app, the working directory. */
  hostDir: string;
  command: string;
  nice: number;
  etcDir: string | null;
  /** More directories to show (a build's cache, config and buildpack). */
  binds?: SandboxBind[];
  /** Supplementary groups (the build group); none by default. */
  groups?: number[];
  /** The cgroup the sandbox runs in (its limits), as `Cgroup.procsFiles`; none by default. */
  cgroupProcs?: string[];
  /**
   * Whether the sandbox may outlive the controller process (a container's, when the next
   * controller process holds it until its replacement serves). By default it dies with it.
   */
  outlivesController?: boolean;
}

/** Finds a program in PATH; null when absent. */
function which(name: string): string | null {
  if (name.includes('/')) return existsSync(name) ? name : null;
  for (const dir of (process.env.PATH ?? '').split(delimiter).concat(['/usr/bin', '/bin'])) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

function run(file: string, args: string[], timeoutMs = 10_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, env: { PATH: SANDBOX_PATH } }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
  });
}

/**
 * Confines each app's processes with bubblewrap (Linux namespaces): a private mount namespace
 * that shows the system read-only, the app's own directory at /app and nothing else of the
 * host (no data directory, no other app, no controller file); a private /tmp; its own PID
 * namespace, so it sees only its own processes and every process it starts dies with it;
 * private IPC and host name; no capabilities; the app's own unprivileged user id (one per
 * app, recorded in `<stateDir>/uids.json`); resource limits with prlimit; a cgroup of its own
 * (memory, CPU time, processes); no new user namespace (a seccomp filter); no descriptor but
 * 0, 1 and 2; a private, bounded /tmp it can write. Needs root.
 */
export class Sandbox {
  private readonly uidRange: UidRange;
  private readonly uidsFile: string;
  private uids: Map<string, number> | null = null;
  private readonly bwrapPath: string | null;
  readonly limits: { processes: number; openFiles: number; fileBytes: number; tmpBytes: number };
  private readonly readOnlyPaths: string[];
  /** The supplementary group of build steps, which no app process has. */
  readonly buildGroup: number;
  /** The cgroups of this sandbox's containers and build steps, under `svc/<first uid of the range>`. */
  readonly cgroups: CgroupTree;
  /** The memory (bytes) and CPU (1024 = one CPU) of a process whose app sets none; null for none. */
  readonly defaults: { memoryBytes: number | null; cpu: number | null };
  private readonly seccomp = userNamespaceFilter();

  constructor(
    private readonly stateDir: string,
    options: SandboxOptions,
  ) {
    this.uidRange = options.uidRange ?? DEFAULT_UID_RANGE;
    const { from, to } = this.uidRange;
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 1000 || to > 4294967294 || from > to) {
      throw new Error(`invalid uid range ${from}-${to}`);
    }
    this.uidsFile = join(stateDir, 'uids.json');
    this.bwrapPath = which(options.bwrap ?? 'bwrap');
    this.limits = {
      processes: options.maxProcesses ?? 512,
      openFiles: options.maxOpenFiles ?? 1024,
      fileBytes: options.maxFileBytes ?? 1024 ** 3,
      tmpBytes: options.tmpBytes ?? 64 * 1024 ** 2,
    };
    this.readOnlyPaths = options.readOnlyPaths ?? [];
    this.cgroups = new CgroupTree(String(from));
    const cpu = options.defaultCpu === undefined ? 1024 : options.defaultCpu;
    this.defaults = { memoryBytes: memoryLimitBytes(options.defaultMemory === undefined ? '1G' : options.defaultMemory), cpu: cpu === 0 ? null : cpu };
    this.buildGroup = options.buildGroup ?? from - 1;
    if (!Number.isInteger(this.buildGroup) || this.buildGroup < 1 || this.buildGroup > 4294967294 || (this.buildGroup >= from && this.buildGroup <= to)) {
      throw new Error(`invalid build group ${this.buildGroup}: a group id outside the uid range ${from}-${to}`);
    }
  }

  /** The cgroup limits of a process: its own memory and CPU, else the defaults; the process limit of an app. */
  cgroupLimits(memoryBytes: number | null, cpu: number | null): CgroupLimits {
    return {
      memoryBytes: memoryBytes ?? this.defaults.memoryBytes,
      cpuShares: cpu !== null && cpu > 0 ? cpu : this.defaults.cpu,
      pids: this.limits.processes,
    };
  }

  /** The uid range apps get. */
  get range(): UidRange {
    return { ...this.uidRange };
  }

  /**
   * Why apps cannot be sandboxed on this machine, or null when they can: runs a process in a
   * sandbox as a user of the range and checks that it has that uid and sees no host file.
   */
  async problem(): Promise<string | null> {
    if (process.platform !== 'linux') return 'the sandbox needs Linux';
    if (typeof process.getuid === 'function' && process.getuid() !== 0) {
      return 'the controller does not run as root, which the sandbox needs to run each app as a user of its own';
    }
    if (this.bwrapPath === null) return 'bubblewrap (bwrap) is not installed';
    for (const tool of [PRLIMIT, SETPRIV, NICE, BASH]) if (!existsSync(tool)) return `${tool} is missing (util-linux, coreutils, bash)`;
    if (this.seccomp === null) return `no seccomp filter is known for the architecture ${process.arch}`;
    const cgroups = await this.cgroups.problem();
    if (cgroups !== null) return cgroups;
    const uid = this.uidRange.to;
    const probeDir = join(this.stateDir, 'probe');
    mkdirSync(probeDir, { recursive: true, mode: 0o700 });
    const probe = this.command({ app: 'probe', uid, hostDir: probeDir, command: `test "$(id -u)" = ${uid} && test ! -e ${JSON.stringify(this.uidsFile)} && echo sandboxed`, nice: 0, etcDir: null });
    const outcome = await run(probe.file, probe.args);
    if (outcome.code === 0 && outcome.output.endsWith('sandboxed')) return null;
    return `bubblewrap cannot create the sandbox here (${outcome.output.split('\n')[0] || `exit status ${String(outcome.code)}`}); user, PID and mount namespaces must be available`;
  }

  /** The app's uid: the one recorded for it, or the lowest free one of the range, recorded now. */
  uidFor(app: string, active: ReadonlySet<string>): number {
    const uids = this.loadUids();
    const known = uids.get(app);
    if (known !== undefined) return known;
    const taken = new Set(uids.values());
    let uid: number | null = null;
    for (let candidate = this.uidRange.from; candidate <= this.uidRange.to; candidate++) {
      if (!taken.has(candidate)) {
        uid = candidate;
        break;
      }
    }
    if (uid === null) {
      // Every uid was given out once: take back one of an app that runs nothing now (its files are
      // only ever visible inside its own sandbox, and none of its processes is left).
      const idle = [...uids].find(([name]) => !active.has(name));
      if (idle === undefined) throw new Error(`no free user id left in ${this.uidRange.from}-${this.uidRange.to} (SANDBOX_UID_RANGE)`);
      uids.delete(idle[0]);
      uid = idle[1];
    }
    uids.set(app, uid);
    this.saveUids(uids);
    return uid;
  }

  /** The uid recorded for the app, without giving it one; null when it has none. */
  knownUid(app: string): number | null {
    return this.loadUids().get(app) ?? null;
  }

  /** Writes the app's `/etc/passwd` and `/etc/group` (its own user only), so programs that look their user up find it. */
  prepareEtc(app: string, uid: number): string {
    const dir = join(this.stateDir, 'etc', app);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    writeFileSync(join(dir, 'passwd'), `root:x:0:0:root:/root:/usr/sbin/nologin\napp:x:${uid}:${uid}:${app}:${APP_MOUNT}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`);
    writeFileSync(join(dir, 'group'), `root:x:0:\napp:x:${uid}:\nnogroup:x:65534:\n`);
    return dir;
  }

  /**
   * The command line that runs `command` under `/bin/sh -c` for app `app` as `uid`, with
   * `hostDir` (read-write) as /app and working directory.
   */
  command(options: SandboxCommandOptions): SandboxedCommand {
    if (this.bwrapPath === null) throw new Error('bubblewrap (bwrap) is not installed');
    const args = [
      // A sandbox that outlives the controller is stopped by the next one (its record names it).
      ...(options.outlivesController === true ? [] : ['--die-with-parent']),
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--hostname',
      options.app,
      // Root inside only to enter the app's directory and change to the app's user: setpriv
      // drops these and every other capability before the app's command starts.
      '--cap-drop',
      'ALL',
      '--cap-add',
      'CAP_SETUID',
      '--cap-add',
      'CAP_SETGID',
      '--cap-add',
      'CAP_SETPCAP',
      '--cap-add',
      'CAP_DAC_OVERRIDE',
      '--cap-add',
      'CAP_DAC_READ_SEARCH',
      // Directories bubblewrap makes for mount points would be private to root otherwise.
      '--perms',
      '0755',
      '--dir',
      '/etc',
    ];
    for (const path of SYSTEM_PATHS) {
      const info = lstatOrNull(path);
      if (info === null) continue;
      if (info.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else args.push('--ro-bind', path, path);
    }
    for (const name of ETC_FILES) args.push('--ro-bind-try', join('/etc', name), join('/etc', name));
    if (options.etcDir !== null) {
      args.push('--ro-bind', join(options.etcDir, 'passwd'), '/etc/passwd', '--ro-bind', join(options.etcDir, 'group'), '/etc/group');
    }
    for (const path of this.readOnlyPaths) args.push('--ro-bind-try', path, path);
    args.push(
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      // Writable by the app's user, as a system's /tmp is.
      '--perms',
      '1777',
      '--size',
      String(this.limits.tmpBytes),
      '--tmpfs',
      '/tmp',
      '--bind',
      options.hostDir,
      APP_MOUNT,
    );
    for (const bind of options.binds ?? []) {
      // The directory holding the mount point must be searchable by the app's user.
      const parent = posix.dirname(bind.path);
      if (parent !== '/') args.push('--perms', '0755', '--dir', parent);
      args.push(bind.writable ? '--bind' : '--ro-bind', bind.host, bind.path);
    }
    args.push(
      '--chdir',
      APP_MOUNT,
      '--',
      PRLIMIT,
      `--nproc=${this.limits.processes}:${this.limits.processes}`,
      `--nofile=${this.limits.openFiles}:${this.limits.openFiles}`,
      `--fsize=${this.limits.fileBytes}:${this.limits.fileBytes}`,
      '--',
    );
    if (options.nice > 0) args.push(NICE, '-n', String(options.nice), '--');
    args.push(
      SETPRIV,
      `--reuid=${options.uid}`,
      `--regid=${options.uid}`,
      ...(options.groups !== undefined && options.groups.length > 0 ? [`--groups=${options.groups.join(',')}`] : ['--clear-groups']),
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
      BASH,
      '-p',
      '-c',
      CLOSE_DESCRIPTORS,
      'svc-app',
      options.command,
    );
    return { file: this.bwrapPath, args, seccomp: this.seccomp, cgroupProcs: options.cgroupProcs ?? [] };
  }

  private loadUids(): Map<string, number> {
    if (this.uids !== null) return this.uids;
    const uids = new Map<string, number>();
    try {
      const data = JSON.parse(readFileSync(this.uidsFile, 'utf8')) as Record<string, unknown>;
      for (const [app, uid] of Object.entries(data)) {
        if (Number.isInteger(uid) && (uid as number) >= this.uidRange.from && (uid as number) <= this.uidRange.to) uids.set(app, uid as number);
      }
    } catch {
      // No record yet (or unreadable): uids are handed out afresh.
    }
    this.uids = uids;
    return uids;
  }

  private saveUids(uids: Map<string, number>): void {
    mkdirSync(this.stateDir, { recursive: true, mode: 0o700 });
    const temporary = `${this.uidsFile}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(Object.fromEntries(uids), null, 1), { mode: 0o600 });
    renameSync(temporary, this.uidsFile);
  }
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}


/**
 * Gives a directory tree to `uid` (files, directories and symbolic links themselves; links are
 * never followed), unless its top already belongs to it.
 */
export async function giveTree(dir: string, uid: number): Promise<void> {
  const top = await lstat(dir);
  if (top.uid === uid && top.gid === uid) return;
  const walk = async (path: string): Promise<void> => {
    await lchown(path, uid, uid);
    const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) await walk(child);
      else await lchown(child, uid, uid);
    }
  };
  // The top last: until it is given, a start that failed halfway gives the whole tree again.
  const entries = await readdir(dir, { withFileTypes: true });
  for (const entry of entries) {
    const child = join(dir, entry.name);
    if (entry.isDirectory()) await walk(child);
    else await lchown(child, uid, uid);
  }
  await lchown(dir, uid, uid);
}
