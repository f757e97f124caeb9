import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildFailed, CONFIG_KEY_PATTERN, type CompileRequest, type CompileSession, type CompiledSource, type InstalledBuildpack, type SourceCompiler } from '@svc/core';
import { BuildCaches } from './build-cache';
import { unmountUnder } from './bounded-disk';
import { BuildDisks } from './build-disks';
import { describeStepEnd, startStep, type RunningStep, type StepOutcome } from './build-step';
import { formatSeconds, niceForCpuShares } from './limits';
import type { LentUser } from './app-users';
import type { SandboxStatus } from './scheduler-options';
import { APP_MOUNT, giveTree, SANDBOX_PATH, type SandboxBind } from './sandbox';
import { outOfMemory, processCgroup, type ProcessCgroup } from './container-limits';

/** Where a build's directories appear inside the sandbox of its steps (BUILD_DIR is the app's own `/app`). */
export const BUILD_PATHS = {
  cache: '/build/cache',
  env: '/build/env',
  buildpack: '/build/buildpack',
  home: '/build/home',
} as const;

/** The host's certificate authorities, which tools in a build (node, npm) must trust, as the host's do. */
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const DETECT_OUTPUT_BYTES = 64 * 1024;
const RELEASE_OUTPUT_BYTES = 1024 * 1024;

/** How a ProcessSourceCompiler builds. */
export interface ProcessSourceCompilerOptions {
  /**
   * The scheduler the built apps run on: it lends each build the app's own user and sandbox,
   * and says (`prepare`, optional) whether its sandbox can be set up here.
   */
  scheduler: { lendUser(app: string): Promise<LentUser>; prepare?(): Promise<SandboxStatus> };
  /** The controller's data directory (the scheduler's): holds `build-cache/<app uuid>` and each build's temporary `build-tmp/<id>`. */
  dataDir: string;
  /** The most resident memory of all the processes of a build step together; null for none. Default 1 GiB. */
  memoryLimitBytes?: number | null;
  /**
   * The CPU of build steps, as an app's `cpu`: in the sandbox a limit (1024 = one CPU; null: the
   * sandbox's default), and a weight (niceness) below 1024. Default null.
   */
  cpuShares?: number | null;
  /** The longest a single step (detect, compile or release) may run. Default 10 minutes. */
  stepTimeoutMs?: number;
  /** The longest all the steps of one build together may run. Default 15 minutes. */
  buildTimeoutMs?: number;
  /**
   * The most a build cache may hold (`BUILD_CACHE_LIMIT_MB`): its file system's size while the
   * build runs (writes past it fail); a build over it is refused and its cache not kept; 0 keeps
   * none. Default 1 GiB.
   */
  cacheLimitBytes?: number;
  /**
   * The most the compiled app directory may take (`BUILD_IMAGE_LIMIT_MB`): its file system's
   * size while the build runs; a build over it is refused and nothing of it kept. Default 2 GiB.
   */
  imageLimitBytes?: number;
  /** The most bytes of output one compile may print. Default 8 MiB. */
  outputLimitBytes?: number;
}

/** Quotes a word for `sh`. */
const quote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Compiles pushed commits with buildpacks on the process scheduler: no image; each step runs
 * in the same sandbox as the app's processes, as the app's own user, with its commit's
 * checkout as BUILD_DIR (`/app`, where the app's processes find it), its build cache, its
 * config and the buildpack shown, on the build network (the internet and DNS, nothing of this
 * machine or of private ranges), within memory, time and output limits.
 */
export class ProcessSourceCompiler implements SourceCompiler {
  private readonly caches: BuildCaches;
  private readonly tmpRoot: string;
  /** The caches of the builds in progress. */
  private readonly building = new Set<string>();
  readonly limits: { memoryBytes: number | null; cpuShares: number | null; nice: number; stepMs: number; buildMs: number; cacheBytes: number; imageBytes: number; outputBytes: number };

  constructor(private readonly options: ProcessSourceCompilerOptions) {
    const dataDir = resolve(options.dataDir);
    this.caches = new BuildCaches(join(dataDir, 'build-cache'));
    this.tmpRoot = join(dataDir, 'build-tmp');
    this.limits = {
      memoryBytes: options.memoryLimitBytes === undefined ? 1024 ** 3 : options.memoryLimitBytes,
      cpuShares: options.cpuShares ?? null,
      nice: niceForCpuShares(options.cpuShares ?? null),
      stepMs: options.stepTimeoutMs ?? 10 * 60_000,
      buildMs: options.buildTimeoutMs ?? 15 * 60_000,
      cacheBytes: options.cacheLimitBytes ?? 1024 ** 3,
      imageBytes: options.imageLimitBytes ?? 2 * 1024 ** 3,
      outputBytes: options.outputLimitBytes ?? 8 * 1024 ** 2,
    };
  }

  /**
   * Opens a build: lends it the app's user, gives it the checkout, and makes its cache, its
   * config directory and its home.
   * @throws Error when the sandbox cannot be set up or the checkout is missing.
   */
  async open(request: CompileRequest): Promise<CompileSession> {
    const directory = resolve(request.directory);
    if (!(await stat(directory).catch(() => null))?.isDirectory()) throw new Error(`the checkout ${directory} does not exist`);
    const uuid = this.caches.directory(request.appUuid);
    // Two builds of one app at once would share its cache, and a checkout's owner.
    if (this.building.has(uuid)) throw buildFailed('another build of this app is in progress: push again once it is over');
    this.building.add(uuid);
    let user: LentUser;
    try {
      user = await this.options.scheduler.lendUser(request.app);
    } catch (error) {
      this.building.delete(uuid);
      throw error;
    }
    const tmp = join(this.tmpRoot, randomUUID());
    try {
      await mkdir(this.tmpRoot, { recursive: true, mode: 0o700 });
      await mkdir(tmp, { mode: 0o700 });
      const envDir = join(tmp, 'env');
      const home = join(tmp, 'home');
      await mkdir(envDir, { mode: 0o700 });
      await mkdir(home, { mode: 0o700 });
      for (const [name, value] of Object.entries(request.env)) {
        // Config names are checked when set; one that could not be a file name is left out.
        if (CONFIG_KEY_PATTERN.test(name)) await writeFile(join(envDir, name), value, { mode: 0o400, flag: 'wx' });
      }
      if (user.uid !== null) {
        await giveTree(envDir, user.uid);
        await chown(home, user.uid, user.uid);
        await giveTree(directory, user.uid);
      }
      const cache = await this.caches.open(request.appUuid, user.uid);
      const disks = await BuildDisks.open(tmp, directory, cache, home, { imageBytes: this.limits.imageBytes, cacheBytes: this.limits.cacheBytes }, user.uid !== null);
      const release = async (): Promise<void> => {
        this.building.delete(uuid);
        await user.release();
      };
      return new ProcessCompileSession(this, request, directory, { ...user, release }, { tmp, envDir, home, disks });
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      this.building.delete(uuid);
      await user.release();
      throw error;
    }
  }

  /**
   * Why no build can run: the sentence of a sandbox that cannot be set up (builds run in it
   * as the app's user), the same one apps cannot run for; null when it can, or without a sandbox.
   */
  async whyBuildsCannotRun(): Promise<string | null> {
    const status = await this.options.scheduler.prepare?.();
    return status?.problem ?? null;
  }

  /**
   * Removes what builds of an interrupted controller left in `build-tmp` (their config, home
   * and file systems, unmounted); resolves with how many builds. Call it at start-up, before
   * any build.
   */
  async removeLeftovers(): Promise<number> {
    await unmountUnder(this.tmpRoot);
    const left = await readdir(this.tmpRoot).catch(() => [] as string[]);
    for (const name of left) await rm(join(this.tmpRoot, name), { recursive: true, force: true });
    return left.length;
  }

  /** Removes the app's build cache; an app without one is fine. */
  async removeApp(_app: string, appUuid: string): Promise<void> {
    await this.caches.remove(appUuid);
  }
}

/** The host directories of one build. */
interface BuildDirectories {
  tmp: string;
  envDir: string;
  home: string;
  /** BUILD_DIR and CACHE_DIR, bounded by the limits. */
  disks: BuildDisks;
}

/** One build's steps, run one after the other. */
class ProcessCompileSession implements CompileSession {
  private readonly deadline: number;
  private running: RunningStep | null = null;
  private closed = false;

  constructor(
    private readonly compiler: ProcessSourceCompiler,
    private readonly request: CompileRequest,
    private readonly directory: string,
    private readonly user: LentUser,
    private readonly dirs: BuildDirectories,
  ) {
    this.deadline = Date.now() + compiler.limits.buildMs;
  }

  async detect(buildpack: InstalledBuildpack): Promise<string | null> {
    const stdout: string[] = [];
    const outcome = await this.step(buildpack, 'detect', [], DETECT_OUTPUT_BYTES, (line, stream) => stream === 'stdout' && stdout.push(line));
    if (outcome.killedFor !== null) throw buildFailed(`bin/detect of the buildpack ${buildpack.name} ${outcome.killedFor}${outcome.tail.note()}`);
    if (outcome.status.code !== 0) return null;
    return stdout.find((line) => line.trim() !== '')?.trim() ?? buildpack.name;
  }

  async compile(buildpack: InstalledBuildpack, output: (line: string) => void): Promise<void> {
    const paths = this.paths();
    const outcome = await this.step(buildpack, 'compile', [paths.cache, paths.env], this.compiler.limits.outputBytes, (line) => output(line));
    // Past a limit, the step's own failure is what the limit made of it (a write that failed).
    const over = await this.dirs.disks.overLimit();
    if (over !== null) throw buildFailed(over);
    if (outcome.killedFor !== null || outcome.status.code !== 0) {
      throw buildFailed(`bin/compile of the buildpack ${buildpack.name} ${describeStepEnd(outcome)}`);
    }
  }

  async release(buildpack: InstalledBuildpack): Promise<string> {
    const stdout: string[] = [];
    const outcome = await this.step(buildpack, 'release', [], RELEASE_OUTPUT_BYTES, (line, stream) => stream === 'stdout' && stdout.push(line));
    if (outcome.killedFor !== null || outcome.status.code !== 0) {
      throw buildFailed(`bin/release of the buildpack ${buildpack.name} ${describeStepEnd(outcome)}${outcome.tail.note()}`);
    }
    return stdout.join('\n');
  }

  async finish(_output: (line: string) => void): Promise<CompiledSource> {
    this.assertOpen();
    this.closed = true;
    try {
      const over = await this.dirs.disks.overLimit();
      if (over !== null) throw buildFailed(over);
      await this.dirs.disks.keep();
    } catch (error) {
      if (this.user.uid !== null) await giveTree(this.directory, 0).catch(() => undefined);
      await this.cleanUp().catch(() => undefined);
      throw error;
    }
    await this.cleanUp();
    return { image: null, workdir: this.directory };
  }

  async discard(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      this.running?.kill();
      await this.running?.done.catch(() => undefined);
      // Nothing of the app may write there any more, whatever the builder does with it next.
      if (this.user.uid !== null) await giveTree(this.directory, 0).catch(() => undefined);
    } finally {
      await this.cleanUp().catch(() => undefined);
    }
  }

  /** Removes the build's file systems, config and home, and gives the app's user back. */
  private async cleanUp(): Promise<void> {
    try {
      await this.dirs.disks.remove();
      await rm(this.dirs.tmp, { recursive: true, force: true });
    } finally {
      await this.user.release();
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the build session is closed');
    if (this.running !== null) throw new Error('a step of the build is still running');
  }

  /** BUILD_DIR, CACHE_DIR, ENV_DIR and HOME as the steps see them. */
  private paths(): { build: string; cache: string; env: string; home: string } {
    if (this.user.sandbox === null) return { build: this.dirs.disks.appPath, cache: this.dirs.disks.cachePath, env: this.dirs.envDir, home: this.dirs.disks.homePath };
    return { build: APP_MOUNT, cache: BUILD_PATHS.cache, env: BUILD_PATHS.env, home: BUILD_PATHS.home };
  }

  private async step(
    buildpack: InstalledBuildpack,
    name: 'detect' | 'compile' | 'release',
    extraArgs: string[],
    outputLimitBytes: number,
    onLine: (line: string, stream: 'stdout' | 'stderr') => void,
  ): Promise<StepOutcome> {
    this.assertOpen();
    const { limits } = this.compiler;
    const left = this.deadline - Date.now();
    if (left <= 0) throw buildFailed(`the build ran longer than its time limit of ${formatSeconds(limits.buildMs)}`);
    const paths = this.paths();
    const sandbox = this.user.sandbox;
    const program = sandbox === null ? join(buildpack.directory, 'bin', name) : `${BUILD_PATHS.buildpack}/bin/${name}`;
    const command = ['exec', program, paths.build, ...extraArgs].map((word, index) => (index === 0 ? word : quote(word))).join(' ');
    const env: Record<string, string> = { PATH: sandbox === null ? (process.env.PATH ?? SANDBOX_PATH) : SANDBOX_PATH, HOME: paths.home, LANG: 'C.UTF-8' };
    if (existsSync(CA_BUNDLE)) env.NODE_EXTRA_CA_CERTS = CA_BUNDLE;
    let sandboxed = null;
    let own: ProcessCgroup | null = null;
    if (sandbox !== null && this.user.uid !== null) {
      try {
        own = await processCgroup(sandbox, 'build', limits.memoryBytes, limits.cpuShares);
      } catch (error) {
        throw buildFailed(`bin/${name} of the buildpack ${buildpack.name} could not be started: its cgroup could not be made: ${error instanceof Error ? error.message : String(error)}`);
      }
      const binds: SandboxBind[] = [
        { host: this.dirs.disks.cachePath, path: BUILD_PATHS.cache, writable: true },
        { host: this.dirs.envDir, path: BUILD_PATHS.env, writable: false },
        { host: this.dirs.disks.homePath, path: BUILD_PATHS.home, writable: true },
        { host: resolve(buildpack.directory), path: BUILD_PATHS.buildpack, writable: false },
      ];
      sandboxed = sandbox.command({
        app: this.request.app,
        uid: this.user.uid,
        hostDir: this.dirs.disks.appPath,
        command,
        nice: limits.nice,
        etcDir: this.user.etcDir,
        binds,
        groups: [sandbox.buildGroup],
        cgroupProcs: own?.cgroup.procsFiles ?? [],
      });
    }
    const byBuild = left < limits.stepMs;
    let running: RunningStep;
    try {
      running = await startStep({
        command,
        cwd: this.dirs.disks.appPath,
        sandboxed,
        env,
        nice: limits.nice,
        timeoutMs: Math.min(left, limits.stepMs),
        timeoutReason: byBuild ? `ran past the build's time limit of ${formatSeconds(limits.buildMs)}` : undefined,
        memoryLimitBytes: limits.memoryBytes,
        outputLimitBytes,
        onLine,
      });
    } catch (error) {
      await own?.cgroup.remove();
      throw buildFailed(`bin/${name} of the buildpack ${buildpack.name} could not be started: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.running = running;
    try {
      const outcome = await running.done;
      // The kernel's kill for memory is the reason, not the signal it sent.
      const oom = await outOfMemory(own);
      return oom !== null && outcome.killedFor === null ? { ...outcome, killedFor: oom } : outcome;
    } finally {
      this.running = null;
      // Nothing of the step runs any more once `done` has resolved.
      await own?.cgroup.remove();
    }
  }
}
