import type Docker from 'dockerode';
import { pack } from 'tar-fs';
import { buildFailed, buildOverCacheLimit, buildOverImageLimit, type CompiledSource, type CompileSession, type InstalledBuildpack } from '@svc/core';
import { limitedOutput, plainLine } from './build-output';
import { STEP_USER, killLeftovers, oomKills, runCacheTask, runQuiet, runStep, type StepResult } from './compile-steps';
import type { BoundedVolume } from './bounded-volume';
import { DEFAULT_LOG_LIMIT, logConfigOf } from './options';
import { pushBuild } from './registry-push';
import type { RegistryLogin } from './registry-login';

/** Where a build's parts are in its container: `BUILD_DIR`, `CACHE_DIR`, `ENV_DIR` and the buildpacks. */
export const COMPILE_PATHS = {
  build: '/app',
  cache: '/cache',
  /** On the container's /tmp, a tmpfs: never part of the committed layer. */
  env: '/tmp/env',
  buildpacks: '/buildpacks',
} as const;

/** The most a `bin/release` may print, in bytes. */
const RELEASE_LIMIT = 64 * 1024;
const MIB = 1024 * 1024;

/** What a session needs of its compiler: the engine, the limits, where the result goes. */
export interface SessionSettings {
  docker: Docker;
  app: string;
  appUuid: string;
  /** The stack image the container was made of, with what its config says (restored in the committed image). */
  stackImage: string;
  stackConfig: { Cmd: string[] | null; Entrypoint: string[] | null };
  /** The stack image's size: what a committed build holds besides what the build made. */
  stackBytes: number;
  /** The labels the committed image carries. */
  labels: Record<string, string>;
  /** The file systems of the build's /app (dropped after it) and of its cache (the app's). */
  volumes: { app: BoundedVolume; cache: BoundedVolume };
  cacheLimitBytes: number;
  imageLimitBytes: number;
  timeoutMs: number;
  stepTimeoutMs: number;
  outputLimitBytes: number;
  memoryBytes: number | null;
  registry: string | null;
  login: RegistryLogin | null;
}

/**
 * One buildpack build in one throwaway container of the stack image: each step is an
 * `exec` in it as the app's user; `finish` commits `/app` as one layer on the stack.
 */
export class DockerCompileSession implements CompileSession {
  private readonly installed = new Map<string, string>();
  private readonly started = Date.now();
  private readonly timer: NodeJS.Timeout;
  private expired = false;
  private closed = false;
  private image: string | null = null;
  private oomSeen = 0;
  private say: ((line: string) => void) | null = null;
  /** The cache is emptied when its volume is released (a build over its limit, or a limit of 0). */
  private dropCache: boolean;
  private released = false;

  constructor(
    private readonly settings: SessionSettings,
    private readonly container: Docker.Container,
  ) {
    this.timer = setTimeout(() => {
      this.expired = true;
      void container.kill().catch(() => undefined);
    }, settings.timeoutMs);
    this.timer.unref();
    this.dropCache = settings.cacheLimitBytes === 0;
  }

  async detect(buildpack: InstalledBuildpack): Promise<string | null> {
    const path = await this.install(buildpack);
    let first: string | null = null;
    const result = await this.step(
      {
        cmd: [`${path}/bin/detect`, COMPILE_PATHS.build],
        timeoutMs: this.settings.stepTimeoutMs,
        onLine: (which, line) => {
          if (which === 'stdout' && first === null && line.trim() !== '') first = line;
        },
      },
      `bin/detect of ${buildpack.name}`,
    );
    await killLeftovers(this.container);
    if (result.exitCode !== 0) return null;
    const name = plainLine(first ?? '').trim();
    return name === '' ? buildpack.name : name.slice(0, 200);
  }

  async compile(buildpack: InstalledBuildpack, output: (line: string) => void): Promise<void> {
    const path = await this.install(buildpack);
    this.say ??= limitedOutput(output, this.settings.outputLimitBytes);
    const say = this.say;
    const what = `bin/compile of ${buildpack.name}`;
    const result = await this.step(
      { cmd: [`${path}/bin/compile`, COMPILE_PATHS.build, COMPILE_PATHS.cache, COMPILE_PATHS.env], timeoutMs: this.timeLeft(), onLine: (_which, line) => say(plainLine(line)) },
      what,
    );
    await killLeftovers(this.container);
    // Past a limit, the step's own failure is what the limit made of it (a write that failed).
    await this.assertWithinLimits();
    if (result.exitCode !== 0) throw buildFailed(await this.failure(what, result));
  }

  async release(buildpack: InstalledBuildpack): Promise<string> {
    const path = await this.install(buildpack);
    let text = '';
    const result = await this.step(
      {
        cmd: [`${path}/bin/release`, COMPILE_PATHS.build],
        timeoutMs: this.settings.stepTimeoutMs,
        onLine: (which, line) => {
          if (which === 'stdout' && text.length < RELEASE_LIMIT) text += `${line}\n`;
        },
      },
      `bin/release of ${buildpack.name}`,
    );
    await killLeftovers(this.container);
    if (result.exitCode !== 0) throw buildFailed(await this.failure(`bin/release of ${buildpack.name}`, result));
    return text;
  }

  async finish(output: (line: string) => void): Promise<CompiledSource> {
    this.assertUsable();
    this.closed = true;
    const { docker, registry } = this.settings;
    try {
      await killLeftovers(this.container);
      await this.assertWithinLimits();
      await this.container.stop({ t: 2 });
      if (this.expired) throw this.timeUp();
      await this.container.remove({ force: true }).catch(() => undefined);
      this.image = await this.commitApp();
      // What the build made: the image without the stack's layers, which every build shares (the operator's choice, not the app's).
      const size = Math.max(0, (await docker.getImage(this.image).inspect()).Size - this.settings.stackBytes);
      if (size > this.settings.imageLimitBytes) throw buildFailed(buildOverImageLimit(size, this.settings.imageLimitBytes));
      clearTimeout(this.timer);
      await this.releaseVolumes();
      if (registry === null) return { image: this.image, workdir: null };
      const abort = new AbortController();
      const left = setTimeout(() => abort.abort(), Math.max(60_000, this.timeLeft()));
      try {
        const reference = await pushBuild(docker, this.settings.app, this.image, { registry, login: this.settings.login, signal: abort.signal, timeoutMs: this.settings.timeoutMs }, output);
        return { image: reference, workdir: null };
      } finally {
        clearTimeout(left);
      }
    } catch (error) {
      await this.discardAll();
      throw error;
    }
  }

  /**
   * The image: the stack with /app as one layer, copied from the build's file system (of the
   * limit's size) by a container of the platform's, which is then committed with the stack's
   * own command and the build's labels. Nothing else of the build's container is in it (its
   * /tmp and ENV_DIR, the buildpacks).
   */
  private async commitApp(): Promise<string> {
    const { docker, stackImage, stackConfig, labels, volumes } = this.settings;
    const script = `mkdir -p ${COMPILE_PATHS.build} && cp -a /svc-app/. ${COMPILE_PATHS.build}/`;
    const copier = await docker.createContainer({
      Image: stackImage,
      ...(stackConfig.Entrypoint === null ? { Cmd: ['/bin/sh', '-c', script] } : { Entrypoint: ['/bin/sh', '-c'], Cmd: [script] }),
      User: '0:0',
      WorkingDir: '/',
      Labels: labels,
      Tty: false,
      HostConfig: {
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        // To read every file of the app's user and write it as it is (owner, mode, times).
        CapAdd: ['CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID'],
        SecurityOpt: ['no-new-privileges'],
        PidsLimit: 32,
        Memory: 256 * MIB,
        MemorySwap: 256 * MIB,
        LogConfig: logConfigOf(DEFAULT_LOG_LIMIT) as Docker.HostConfig['LogConfig'],
        Mounts: [{ Type: 'volume', Source: volumes.app.name, Target: '/svc-app', ReadOnly: true }],
      },
    });
    try {
      const waited = copier.wait({ condition: 'next-exit' }) as Promise<{ StatusCode?: number }>;
      await copier.start();
      const status = await waited;
      if ((status.StatusCode ?? 1) !== 0) throw new Error(`the build's /app could not be copied into its image (exit ${status.StatusCode ?? '?'})`);
      const committed = (await copier.commit({
        pause: false,
        changes: [
          `USER ${STEP_USER}`,
          `WORKDIR ${COMPILE_PATHS.build}`,
          // The copy's command goes: the stack's own come back (without one, the image has the shell's default).
          ...(stackConfig.Entrypoint === null ? [] : [`ENTRYPOINT ${JSON.stringify(stackConfig.Entrypoint)}`]),
          `CMD ${JSON.stringify(stackConfig.Cmd ?? ['/bin/sh'])}`,
          `LABEL ${Object.entries(labels)
            .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
            .join(' ')}`,
        ],
      })) as { Id?: string; id?: string };
      const id = committed.Id ?? committed.id ?? null;
      if (id === null) throw new Error('the engine committed the build without naming an image');
      return id;
    } finally {
      await copier.remove({ force: true }).catch(() => undefined);
    }
  }

  async discard(): Promise<void> {
    this.closed = true;
    await this.discardAll();
  }

  private async discardAll(): Promise<void> {
    clearTimeout(this.timer);
    await this.container.remove({ force: true }).catch(() => undefined);
    if (this.image !== null) await this.settings.docker.getImage(this.image).remove({ force: true }).catch(() => undefined);
    this.image = null;
    await this.releaseVolumes().catch(() => undefined);
  }

  /** Takes the build's file systems off the engine: /app goes, the cache stays unless it is to be emptied. */
  private async releaseVolumes(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const { app, cache } = this.settings.volumes;
    try {
      await app.release(true);
    } finally {
      await cache.release(this.dropCache);
    }
  }

  /** Copies a buildpack's directory into the container once (root's, read-only for the app's user); resolves with its path there. */
  private async install(buildpack: InstalledBuildpack): Promise<string> {
    this.assertUsable();
    const known = this.installed.get(buildpack.directory);
    if (known !== undefined) return known;
    const path = `${COMPILE_PATHS.buildpacks}/${this.installed.size}`;
    const made = await runQuiet(this.container, ['/bin/mkdir', '-p', path], '0:0');
    if (made.exitCode !== 0) throw new Error(`the buildpack ${buildpack.name} could not be copied into the build`);
    const archive = pack(buildpack.directory, {
      map: (header) => ({ ...header, uid: 0, gid: 0, uname: 'root', gname: 'root', mode: (header.mode ?? 0o644) & 0o755 }),
    });
    try {
      await this.container.putArchive(archive, { path });
    } finally {
      archive.destroy();
    }
    this.installed.set(buildpack.directory, path);
    return path;
  }

  /** Runs a step; a time limit passed is the build's failure. */
  private async step(run: Parameters<typeof runStep>[1], what: string): Promise<StepResult> {
    this.assertUsable();
    const result = await runStep(this.container, { env: [`HOME=${COMPILE_PATHS.build}`, `STACK=${this.settings.stackImage}`], ...run });
    if (this.expired) throw this.timeUp();
    if (result.timedOut) {
      this.expired = true;
      // A compile's limit is what is left of the build's: past it, the build took too long.
      if (Date.now() - this.started >= this.settings.timeoutMs - 1000) throw this.timeUp();
      throw buildFailed(`${what} took longer than ${Math.round(run.timeoutMs / 1000)} seconds, the most it may take.`);
    }
    return result;
  }

  /** Why a step failed: its exit code, and the memory limit when the kernel killed one of its processes for it. */
  private async failure(what: string, result: StepResult): Promise<string> {
    const kills = await oomKills(this.container).catch(() => this.oomSeen);
    const oom = kills > this.oomSeen;
    this.oomSeen = kills;
    const limit = this.settings.memoryBytes === null ? '' : ` of ${Math.round(this.settings.memoryBytes / MIB)} MiB`;
    if (oom) return `${what} ran out of memory (the build's limit${limit}) and exited with code ${result.exitCode ?? '?'}.`;
    return `${what} exited with code ${result.exitCode ?? '?'}.`;
  }

  /**
   * Measures the cache and /app from containers of their own once the step's processes are
   * gone; refuses the build over a limit, with the figures. The file systems stopped the
   * writes at their size: this tells a build that reached it from one that fit.
   * @throws RequestRejected `BUILD.FAILED` over a limit.
   */
  private async assertWithinLimits(): Promise<void> {
    const { cacheLimitBytes, imageLimitBytes, volumes } = this.settings;
    if (cacheLimitBytes > 0) {
      const cache = await this.measure(volumes.cache.name);
      if (cache > cacheLimitBytes) {
        this.dropCache = true;
        throw buildFailed(buildOverCacheLimit(cache, cacheLimitBytes, 'emptied'));
      }
    }
    const app = await this.measure(volumes.app.name);
    if (app > imageLimitBytes) throw buildFailed(buildOverImageLimit(app, imageLimitBytes));
  }

  /** The bytes a volume's files take. @throws Error when they cannot be measured. */
  private async measure(volume: string): Promise<number> {
    const { docker, stackImage, labels } = this.settings;
    const measured = await runCacheTask(docker, { image: stackImage, volume, script: 'du -sk /cache', capabilities: ['DAC_READ_SEARCH'], labels });
    const kib = Number(/^(\d+)\s/.exec(measured.output)?.[1] ?? NaN);
    if (measured.exitCode !== 0 || !Number.isFinite(kib)) throw new Error(`the build's volume ${volume} could not be measured: ${measured.output.slice(0, 500)}`);
    return kib * 1024;
  }

  private timeLeft(): number {
    return Math.max(1000, this.settings.timeoutMs - (Date.now() - this.started));
  }

  private timeUp(): Error {
    return buildFailed(`it took longer than ${Math.round(this.settings.timeoutMs / 1000)} seconds, the most a build may take.`);
  }

  private assertUsable(): void {
    if (this.expired) throw this.timeUp();
    if (this.closed) throw new Error('the build session is closed');
  }
}
