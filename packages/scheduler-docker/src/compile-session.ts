import type Docker from 'dockerode';
import { pack } from 'tar-fs';
import { buildFailed, type CompiledSource, type CompileSession, type InstalledBuildpack } from '@svc/core';
import { limitedOutput, plainLine } from './build-output';
import { STEP_USER, killLeftovers, oomKills, runCacheTask, runQuiet, runStep, type StepResult } from './compile-steps';
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
  /** The labels the committed image carries. */
  labels: Record<string, string>;
  cacheVolume: string;
  cacheLimitBytes: number;
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

  constructor(
    private readonly settings: SessionSettings,
    private readonly container: Docker.Container,
  ) {
    this.timer = setTimeout(() => {
      this.expired = true;
      void container.kill().catch(() => undefined);
    }, settings.timeoutMs);
    this.timer.unref();
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
    if (result.exitCode !== 0) throw buildFailed(await this.failure(what, result));
    await this.keepCacheWithinLimit(say);
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
    const { docker, stackConfig, labels, registry } = this.settings;
    try {
      await killLeftovers(this.container);
      // The config values and the buildpacks are no part of the result (the values are on a tmpfs the commit leaves out anyway).
      await runQuiet(this.container, ['/bin/sh', '-c', `chmod -R u+rwx ${COMPILE_PATHS.env} 2>/dev/null; rm -rf ${COMPILE_PATHS.env}`], STEP_USER);
      await runQuiet(this.container, ['/bin/rm', '-rf', COMPILE_PATHS.buildpacks], '0:0');
      await this.container.stop({ t: 2 });
      if (this.expired) throw this.timeUp();
      const committed = (await this.container.commit({
        pause: false,
        changes: [
          `USER ${STEP_USER}`,
          `WORKDIR ${COMPILE_PATHS.build}`,
          // The idle command goes: the stack's own come back (without one, the image has the shell's default).
          ...(stackConfig.Entrypoint === null ? [] : [`ENTRYPOINT ${JSON.stringify(stackConfig.Entrypoint)}`]),
          `CMD ${JSON.stringify(stackConfig.Cmd ?? ['/bin/sh'])}`,
          `LABEL ${Object.entries(labels)
            .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
            .join(' ')}`,
        ],
      })) as { Id?: string; id?: string };
      this.image = committed.Id ?? committed.id ?? null;
      if (this.image === null) throw new Error('the engine committed the build without naming an image');
      await this.container.remove({ force: true }).catch(() => undefined);
      clearTimeout(this.timer);
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

  async discard(): Promise<void> {
    this.closed = true;
    await this.discardAll();
  }

  private async discardAll(): Promise<void> {
    clearTimeout(this.timer);
    await this.container.remove({ force: true }).catch(() => undefined);
    if (this.image !== null) await this.settings.docker.getImage(this.image).remove({ force: true }).catch(() => undefined);
    this.image = null;
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
   * Measures the cache from a container of its own once the step's processes are gone, and
   * empties it when it is over the limit, telling the pusher.
   */
  private async keepCacheWithinLimit(say: (line: string) => void): Promise<void> {
    const { docker, stackImage, cacheVolume, cacheLimitBytes, labels } = this.settings;
    const measured = await runCacheTask(docker, { image: stackImage, volume: cacheVolume, script: 'du -sk /cache', capabilities: ['DAC_READ_SEARCH'], labels });
    const kib = Number(/^(\d+)\s/.exec(measured.output)?.[1] ?? NaN);
    if (measured.exitCode === 0 && Number.isFinite(kib) && kib * 1024 <= cacheLimitBytes) return;
    const size = Number.isFinite(kib) ? `${Math.ceil(kib / 1024)} MiB` : 'a size that could not be measured';
    const emptied = await runCacheTask(docker, {
      image: stackImage,
      volume: cacheVolume,
      script: 'rm -rf /cache/* /cache/.[!.]* /cache/..?* && [ -z "$(ls -A /cache)" ]',
      capabilities: ['DAC_OVERRIDE', 'FOWNER'],
      labels,
    });
    if (emptied.exitCode !== 0) throw new Error(`the build cache ${cacheVolume} could not be emptied: ${emptied.output.slice(0, 500)}`);
    say(`The build cache (${size}) is over its limit of ${Math.floor(cacheLimitBytes / MIB)} MiB: it was emptied, the next build starts without it.`);
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
