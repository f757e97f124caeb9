import { randomUUID } from 'node:crypto';
import { basename, dirname } from 'node:path';
import type Docker from 'dockerode';
import { pack } from 'tar-fs';
import { boundedDiskBytes, buildFailed, type BuildDestination, type CompileRequest, type CompileSession, type SourceCompiler } from '@svc/core';
import { BUILD_BRIDGE, BUILD_NETWORK, buildUnguardSteps, prepareBuildNetwork } from './build-network';
import { DockerCompileSession, COMPILE_PATHS } from './compile-session';
import { runStep } from './compile-steps';
import { attachBoundedVolume, removeLeftoverVolumes, type BoundedVolume } from './bounded-volume';
import { LABELS, engineReason, engineStatus, pingEngine } from './engine';
import { removeGuardedNetwork } from './guarded-network';
import { guardRunner } from './iptables-engine';
import type { GuardRunnerChoice, IptablesRunner } from './iptables-runner';
import { APP_UUID_LABEL, sizeOf } from './image-builder';
import type { RegistryLogin } from './registry-login';
import { checkStackImage, ensureStackImage, type StackImageSource } from './stack-image';
import { DEFAULT_LOG_LIMIT, logConfigOf } from './options';

const MIB = 1024 * 1024;

/** How long the readiness check waits for the engine to answer. */
const READINESS_PING_MS = 5000;

/** The name every build container starts with. */
export const COMPILE_CONTAINER_PREFIX = 'svc-compile-';

/** How buildpack builds run on a Docker engine; every limit has a default. */
export interface DockerSourceCompilerOptions {
  /** The engine client. */
  docker: Docker;
  /** The stack image builds run in and their result is laid onto (`STACK_IMAGE`). */
  stackImage: string;
  /** The engine's address for `scripts/make-stack-image.sh` (`DOCKER_HOST`); null: the docker client's default. */
  dockerHost?: string | null;
  /** Make a missing stack image with the script on first need; default: when the script and a static busybox are there. */
  makeStackImage?: boolean;
  /** The script that makes it (default: the repository's) and the busybox it copies (default `/bin/busybox`). */
  stackImageScript?: string;
  busybox?: string;
  /** The build network (default `svc-build`) and its Linux bridge when it is made here (default `svc-build0`). */
  network?: string;
  bridge?: string;
  /** Install the build network's iptables guards (needs root on the engine's machine, or a helper container). Default true; false only where the operator installs them. */
  guardNetwork?: boolean;
  /** Where the guards' iptables commands run (`DOCKER_GUARDS`): `auto` (default), `local` or `engine` (a helper container of the stack image). */
  guards?: GuardRunnerChoice;
  /** Ranges no build step reaches besides the private, loopback, link-local and CGNAT ones (e.g. the machine's LAN). */
  extraBlockedRanges?: string[];
  /** What build steps may reach besides the internet (`BUILD_NETWORK_ALLOW`: an internal mirror), even on this host or a private range. */
  buildAllowed?: readonly BuildDestination[];
  /** The resolv.conf whose name servers build steps' DNS queries reach; default `/etc/resolv.conf`. */
  resolvConf?: string;
  /** Memory (no swap) of a build's container, in bytes; default 1 GiB. */
  memoryBytes?: number;
  /** CPU limit of a build's container in billionths of a CPU; default one CPU; null: none. */
  nanoCpus?: number | null;
  /** Most processes in a build's container; default 256. */
  pidsLimit?: number;
  /** How long a whole build may take (`BUILD_TIMEOUT_SECONDS`); default 15 minutes. */
  timeoutMs?: number;
  /** How long `bin/detect` and `bin/release` may take each; default 60 s. */
  stepTimeoutMs?: number;
  /**
   * The most a build cache may hold (`BUILD_CACHE_LIMIT_MB`): the size (plus a margin) of its
   * file system while the build runs, a build over it refused and its cache emptied; 0 keeps
   * none. Default 512 MiB.
   */
  cacheLimitBytes?: number;
  /**
   * The most a build may make (`BUILD_IMAGE_LIMIT_MB`): the size (plus a margin) of the file
   * system of its /app while it runs, and of its committed image, measured before it is pushed
   * or used; a build over it is refused and nothing of it kept. Default 2 GiB.
   */
  imageLimitBytes?: number;
  /** The largest commit a build takes; default 256 MiB. */
  sourceLimitBytes?: number;
  /** How much of the compile's output reaches the pusher; default 1 MiB. */
  outputLimitBytes?: number;
  /** The size of the build's /tmp (a tmpfs, counted in its memory); default 256 MiB. */
  tmpBytes?: number;
  /** The registry builds are pushed to (`REGISTRY`); null or absent: images stay in the engine. */
  registry?: string | null;
  /** Its login; null or absent: it takes pushes without one. */
  registryLogin?: Pick<RegistryLogin, 'username' | 'password'> | null;
}

/** The name of an app's build cache volume. */
export function cacheVolumeName(appUuid: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/.test(appUuid)) throw new Error(`unusable app uuid "${appUuid}"`);
  return `svc-cache-${appUuid}`;
}

/**
 * Compiles pushed commits with buildpacks on a Docker engine: each build is one throwaway
 * container of the stack image, confined like the app's own containers (the app's user, no
 * capabilities, no-new-privileges, pids, memory and CPU limits) on a build network that
 * reaches the internet and nothing of this host or private networks; each app keeps a build
 * cache volume of its own.
 */
export class DockerSourceCompiler implements SourceCompiler {
  private readonly docker: Docker;
  private readonly settings: Required<Omit<DockerSourceCompilerOptions, 'docker' | 'dockerHost' | 'makeStackImage' | 'stackImageScript' | 'busybox' | 'registry' | 'registryLogin' | 'nanoCpus' | 'guards'>>;
  private readonly guards: IptablesRunner;
  private readonly nanoCpus: number | null;
  private readonly stack: StackImageSource;
  private readonly registry: string | null;
  private readonly login: RegistryLogin | null;
  private prepared: Promise<void> | null = null;
  private stackMade: Promise<void> | null = null;

  constructor(options: DockerSourceCompilerOptions) {
    this.docker = options.docker;
    this.settings = {
      stackImage: options.stackImage,
      network: options.network ?? BUILD_NETWORK,
      bridge: options.bridge ?? BUILD_BRIDGE,
      guardNetwork: options.guardNetwork ?? true,
      extraBlockedRanges: options.extraBlockedRanges ?? [],
      buildAllowed: options.buildAllowed ?? [],
      resolvConf: options.resolvConf ?? '/etc/resolv.conf',
      memoryBytes: options.memoryBytes ?? 1024 * MIB,
      pidsLimit: options.pidsLimit ?? 256,
      timeoutMs: options.timeoutMs ?? 15 * 60_000,
      stepTimeoutMs: options.stepTimeoutMs ?? 60_000,
      cacheLimitBytes: options.cacheLimitBytes ?? 512 * MIB,
      imageLimitBytes: options.imageLimitBytes ?? 2048 * MIB,
      sourceLimitBytes: options.sourceLimitBytes ?? 256 * MIB,
      outputLimitBytes: options.outputLimitBytes ?? MIB,
      tmpBytes: options.tmpBytes ?? 256 * MIB,
    };
    this.nanoCpus = options.nanoCpus === undefined ? 1e9 : options.nanoCpus;
    this.stack = {
      docker: options.docker,
      image: options.stackImage,
      dockerHost: options.dockerHost ?? null,
      ...(options.stackImageScript === undefined ? {} : { script: options.stackImageScript }),
      ...(options.busybox === undefined ? {} : { busybox: options.busybox }),
      ...(options.makeStackImage === undefined ? {} : { make: options.makeStackImage }),
    };
    this.registry = options.registry?.replace(/\/+$/, '') || null;
    this.login = this.registry !== null && options.registryLogin ? { registry: this.registry, ...options.registryLogin } : null;
    // The helper that installs the guards through the engine is a container of the stack image.
    this.guards = guardRunner({ docker: options.docker, choice: options.guards ?? 'auto', image: options.stackImage, ensureImage: () => this.ensureStack() });
  }

  /**
   * Makes the build network and installs its guards, once; called by the first build, or at
   * start-up to fail early.
   * @throws Error when the network cannot be made or guarded.
   */
  prepare(): Promise<void> {
    this.prepared ??= this.setUp().catch((error: unknown) => {
      this.prepared = null;
      throw error;
    });
    return this.prepared;
  }

  /**
   * Why no build can be opened now, naming the fix: the engine does not answer, the build
   * network cannot be made or guarded (the error `prepare` meets, tried again at each call
   * until it succeeds), or the stack image is missing and cannot be made here; null when
   * builds can run.
   */
  async whyBuildsCannotRun(): Promise<string | null> {
    const engine = await pingEngine(this.docker, READINESS_PING_MS);
    if (engine !== null) return `buildpack builds cannot run: the Docker engine does not answer (${engine}): start it, or set DOCKER_HOST to where it runs`;
    try {
      await this.prepare();
    } catch (error) {
      return (
        `buildpack builds cannot run: the build network ${this.settings.network} could not be prepared: ${engineReason(error)}. ` +
        'Fix that (docs/operations.md, "Buildpack builds on a Docker engine", says what the network and its iptables guards need): ' +
        'builds are taken again, without a restart, once it can be prepared'
      );
    }
    try {
      const stack = await checkStackImage(this.stack);
      return stack.state === 'missing' ? stack.message : null;
    } catch (error) {
      return `buildpack builds cannot run: the stack image ${this.settings.stackImage} could not be looked up: ${engineReason(error)}`;
    }
  }

  async open(request: CompileRequest): Promise<CompileSession> {
    const limit = this.settings.sourceLimitBytes;
    if ((await sizeOf(request.directory, limit, () => false)) > limit) {
      throw buildFailed(`the commit's files take more than ${Math.floor(limit / MIB)} MiB, the most a build may take.`);
    }
    await this.prepare();
    await this.ensureStack();
    const stack = await this.docker.getImage(this.settings.stackImage).inspect();
    const labels = { [LABELS.app]: request.app, [APP_UUID_LABEL]: request.appUuid };
    const volumes = await this.attachVolumes(request.appUuid, labels);
    const entrypoint = (stack.Config.Entrypoint as string[] | null | undefined) ?? [];
    const idle = String(Math.ceil(this.settings.timeoutMs / 1000) + 60);
    const container = await this.createBuildContainer(volumes, {
      name: `${COMPILE_CONTAINER_PREFIX}${randomUUID()}`,
      Image: this.settings.stackImage,
      // The container idles as another user than the steps': a step's `kill -1` cannot end it.
      // An empty entrypoint cannot be committed back, so the stack's is replaced only when it has one.
      ...(entrypoint.length > 0 ? { Entrypoint: ['/bin/sleep'], Cmd: [idle] } : { Cmd: ['/bin/sleep', idle] }),
      User: '65534:65534',
      WorkingDir: COMPILE_PATHS.build,
      Labels: labels,
      Tty: false,
      OpenStdin: false,
      HostConfig: {
        NetworkMode: this.settings.network,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        PidsLimit: this.settings.pidsLimit,
        Init: true,
        RestartPolicy: { Name: 'no' },
        LogConfig: logConfigOf(DEFAULT_LOG_LIMIT) as Docker.HostConfig['LogConfig'],
        Memory: this.settings.memoryBytes,
        MemorySwap: this.settings.memoryBytes,
        ...(this.nanoCpus === null ? {} : { NanoCpus: this.nanoCpus }),
        // /app and /cache are file systems of their limits' sizes: a write past one fails while the build runs.
        Mounts: [
          { Type: 'volume', Source: volumes.app.name, Target: COMPILE_PATHS.build },
          { Type: 'volume', Source: volumes.cache.name, Target: COMPILE_PATHS.cache },
        ],
        // /tmp (ENV_DIR in it) is never part of the commit.
        Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${this.settings.tmpBytes},mode=1777` },
      },
    });
    const session = new DockerCompileSession(
      {
        docker: this.docker,
        app: request.app,
        appUuid: request.appUuid,
        stackImage: this.settings.stackImage,
        stackConfig: { Cmd: stack.Config.Cmd ?? null, Entrypoint: entrypoint.length > 0 ? entrypoint : null },
        stackBytes: stack.Size,
        labels,
        volumes,
        cacheLimitBytes: this.settings.cacheLimitBytes,
        imageLimitBytes: this.settings.imageLimitBytes,
        timeoutMs: this.settings.timeoutMs,
        stepTimeoutMs: this.settings.stepTimeoutMs,
        outputLimitBytes: this.settings.outputLimitBytes,
        memoryBytes: this.settings.memoryBytes,
        registry: this.registry,
        login: this.login,
      },
      container,
    );
    try {
      await container.start();
      await this.copySource(container, request.directory);
      await this.writeEnv(container, request.env);
    } catch (error) {
      await session.discard();
      throw error;
    }
    return session;
  }

  /**
   * Removes the build containers an interrupted controller left on this compiler's network
   * (older than twice the build time limit: no build of a running controller can still use
   * them), then the file systems of its builds no container uses (their volumes and loop
   * devices; an app's cache volume stays); resolves with how many containers.
   * Call it at start-up.
   */
  async removeLeftovers(): Promise<number> {
    const listed = await this.docker.listContainers({ all: true, filters: { name: [COMPILE_CONTAINER_PREFIX], label: [LABELS.app], network: [this.settings.network] } });
    const before = Date.now() / 1000 - (2 * this.settings.timeoutMs) / 1000;
    let removed = 0;
    for (const info of listed) {
      if (!info.Names.some((name) => name.replace(/^\//, '').startsWith(COMPILE_CONTAINER_PREFIX)) || info.Created > before) continue;
      await this.docker
        .getContainer(info.Id)
        .remove({ force: true })
        .then(() => removed++)
        .catch(() => undefined);
    }
    // Their file systems go too (the volumes, the loop devices), once no container uses them.
    await removeLeftoverVolumes(this.docker, this.settings.stackImage, LABELS.app, before * 1000);
    return removed;
  }

  /**
   * Takes builds off the engine (the operator's teardown): removes every build container on the
   * build network, the network, and its guards (when this compiler installs them).
   * @throws Error when the network is still used (another container on it) or the guards cannot be removed.
   */
  async teardown(): Promise<void> {
    const listed = await this.docker.listContainers({ all: true, filters: { name: [COMPILE_CONTAINER_PREFIX], network: [this.settings.network] } });
    for (const info of listed) {
      if (info.Names.some((name) => name.replace(/^\//, '').startsWith(COMPILE_CONTAINER_PREFIX))) await this.docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined);
    }
    const unguard = this.settings.guardNetwork ? buildUnguardSteps : () => [];
    await removeGuardedNetwork(this.docker, this.settings.network, this.settings.bridge, unguard, this.guards);
    this.prepared = null;
  }

  /** Creates the build's container; its volumes are released when it cannot be. */
  private async createBuildContainer(volumes: { app: BoundedVolume; cache: BoundedVolume }, spec: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    try {
      return await this.docker.createContainer(spec);
    } catch (error) {
      await volumes.app.release(true).catch(() => undefined);
      await volumes.cache.release(false).catch(() => undefined);
      throw error;
    }
  }

  /**
   * The build's /app (a file system of its own, dropped after the build) and its cache (the
   * app's, kept in its cache volume; a new one with a limit of 0), of their limits' sizes.
   */
  private async attachVolumes(appUuid: string, labels: Record<string, string>): Promise<{ app: BoundedVolume; cache: BoundedVolume }> {
    const { stackImage: image, imageLimitBytes, cacheLimitBytes } = this.settings;
    const app = await attachBoundedVolume(this.docker, { image, backing: `svc-app-${randomUUID()}`, file: 'app', bytes: boundedDiskBytes(imageLimitBytes), fresh: true, ownBacking: true, labels });
    try {
      const cache = await attachBoundedVolume(this.docker, { image, backing: cacheVolumeName(appUuid), file: 'cache', bytes: boundedDiskBytes(cacheLimitBytes), fresh: cacheLimitBytes === 0, ownBacking: false, labels });
      return { app, cache };
    } catch (error) {
      await app.release(true).catch(() => undefined);
      throw error;
    }
  }

  async removeApp(_app: string, appUuid: string): Promise<void> {
    try {
      await this.docker.getVolume(cacheVolumeName(appUuid)).remove();
    } catch (error) {
      if (engineStatus(error) !== 404) throw error;
    }
  }

  private async setUp(): Promise<void> {
    if (!this.settings.guardNetwork) {
      await prepareBuildNetworkUnguarded(this.docker, this.settings.network, this.settings.bridge);
      return;
    }
    await prepareBuildNetwork(this.docker, {
      network: this.settings.network,
      bridge: this.settings.bridge,
      labels: {},
      resolvConf: this.settings.resolvConf,
      extraBlocked: this.settings.extraBlockedRanges,
      allowed: this.settings.buildAllowed,
      runner: this.guards,
    });
  }

  /** Makes the stack image when the engine lacks it (once at a time). */
  private async ensureStack(): Promise<void> {
    this.stackMade ??= ensureStackImage(this.stack, () => undefined).finally(() => (this.stackMade = null));
    await this.stackMade;
  }

  /** The commit's files into /app, the app's user's. */
  private async copySource(container: Docker.Container, directory: string): Promise<void> {
    // Laid out from the parent, with an entry for the build directory itself: /app is the app's
    // user's even on a stack image whose /app belongs to root, so the app can write its own files.
    const base = basename(COMPILE_PATHS.build);
    const owned = { uid: 10000, gid: 10000, uname: 'app', gname: 'app' };
    const archive = pack(directory, {
      map: (header) => ({ ...header, ...owned, name: `${base}/${header.name}` }),
      finalize: false,
      finish: (tar) => {
        tar.entry({ name: base, type: 'directory', mode: 0o755, ...owned });
        tar.finalize();
      },
    });
    try {
      await container.putArchive(archive, { path: dirname(COMPILE_PATHS.build) });
    } finally {
      archive.destroy();
    }
  }

  /**
   * ENV_DIR: one file per config value, the app's user's only, on the container's tmpfs. The
   * values go in through the environment of one `exec` (never a file of this host, never a
   * layer), the names as its arguments.
   */
  private async writeEnv(container: Docker.Container, env: Record<string, string>): Promise<void> {
    const names = Object.keys(env).filter((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name));
    const writes = names.map((_, i) => `printf '%s' "$SVC_ENV_VALUE_${i}" >"$1/\${${i + 2}}"`);
    const script = ['umask 077', 'mkdir -p "$1"', ...writes].join(' && ');
    const written = await runStep(container, {
      cmd: ['/bin/sh', '-c', script, 'sh', COMPILE_PATHS.env, ...names],
      env: names.map((name, i) => `SVC_ENV_VALUE_${i}=${env[name] ?? ''}`),
      timeoutMs: 30_000,
    });
    if (written.exitCode !== 0) throw new Error(`the config values could not be written into the build (exit ${written.exitCode ?? '?'})`);
  }
}

/** The build network without guards (the operator installs them). */
async function prepareBuildNetworkUnguarded(docker: Docker, network: string, bridge: string): Promise<void> {
  try {
    await docker.getNetwork(network).inspect();
  } catch (error) {
    if (engineStatus(error) !== 404) throw error;
    await docker.createNetwork({ Name: network, Driver: 'bridge', CheckDuplicate: true, Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': bridge } });
  }
}
