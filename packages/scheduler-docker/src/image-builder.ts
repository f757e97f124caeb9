import { lstatSync } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import ignore from '@balena/dockerignore';
import type Docker from 'dockerode';
import { pack } from 'tar-fs';
import { buildFailed, isDigestReference, isReleaseImage, type ImageBuilder, type ImageBuildRequest } from '@svc/core';
import { LABELS, pingEngine } from './engine';
import { CONTROL, buildErrorMessage, limitedOutput } from './build-output';
import type { RegistryLogin } from './registry-login';
import { PUSHED_TAG, pushBuild } from './registry-push';
import { assertBuildReferences, assertEngineConfinesBuilds, assertEngineTakesBuildCgroups } from './build-checks';
import { BUILD_CGROUP_PARENT, BuildCgroups, CGROUP_ROOT, cgroupsWritable, type BuildCgroup } from './build-cgroups';
import { EngineBuildCgroups } from './build-cgroups-engine';
import { APP_UUID_LABEL } from './image-references';
import { labelStages } from './dockerfile-references';

/** The user (uid and gid) apps run as: a Procfile build's files in `/app` belong to it. */
export const APP_UID = 10000;

/** The label every image this builder makes carries: the app it belongs to (the schedulers refuse it to other apps). */
export const APP_LABEL = LABELS.app;

export { APP_UUID_LABEL };

/** How the builder builds; every limit has a default. */
export interface DockerImageBuilderOptions {
  /** The image a Procfile-only commit is laid onto (`STACK_IMAGE`); it must exist in the engine. */
  stackImage: string;
  /** The uid and gid a Procfile build's files belong to; default `APP_UID`. */
  appUid?: number;
  /** Memory (and memory plus swap: no swap) of each build step's container, in bytes; default 1 GiB. */
  memoryBytes?: number;
  /** CPU shares of each build step's container (1024 = one full share); default 512. */
  cpuShares?: number;
  /** How long a build may take before it is stopped and fails; default 10 minutes. */
  timeoutMs?: number;
  /** The largest checkout sent to the engine, in bytes; default 256 MiB. */
  contextLimitBytes?: number;
  /** The network build steps run in (`none`, `bridge`, a network's name); default `none`. */
  network?: string;
  /** How much build output reaches the pusher, in bytes; the rest is left out. Default 1 MiB. */
  outputLimitBytes?: number;
  /** An unnamed image of an app older than this is the leftover of an interrupted build; default twice `timeoutMs`. */
  leftoverAgeMs?: number;
  /**
   * The registry every node pulls from (`REGISTRY`: `host[:port][/path]`); null or absent:
   * images stay in the engine that built them. With one, each build is pushed there and
   * `build` resolves with its reference by digest.
   */
  registry?: string | null;
  /** The registry's login (`REGISTRY_USERNAME`, `REGISTRY_PASSWORD`); null or absent: the registry takes pushes without one. */
  registryLogin?: Pick<RegistryLogin, 'username' | 'password'> | null;
  /** Registries on this host or a private network a Dockerfile may pull from (`REGISTRY_ALLOW`); `registry` is always allowed. */
  registryAllow?: readonly string[];
  /** The largest image a build may make, in bytes (`BUILD_IMAGE_LIMIT_MB`); default 2 GiB. */
  imageLimitBytes?: number;
  /**
   * Most processes of one Dockerfile build at once, all its steps together (`pids.max` of the
   * build's own cgroup; a fork bomb stops there); default 512.
   */
  pidsLimit?: number;
  /** The cgroup every Dockerfile build's cgroup is made under (`/<parent>/build-<hex>`); default `svc-builds`. */
  cgroupParent?: string;
  /** Where the engine's machine mounts its cgroups; default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /**
   * Who makes a build's cgroup: `local`, this process (root on the engine's machine);
   * `engine`, a helper container of `stackImage` on the engine; `auto` (default): this
   * process when it can write the cgroups and the engine is on a local socket, else the engine.
   */
  cgroupMaker?: 'auto' | 'local' | 'engine';
  /** CPUs each build step may use (CFS quota); default 1. */
  cpus?: number;
  /** Refuse Dockerfile builds on an engine without user-namespace remapping or rootless mode; default true. */
  requireUserNamespaces?: boolean;
}

const MIB = 1024 * 1024;
const STEP = /^Step \d+\/\d+ : (\S+)/i;
const LAYER = /^ ---> ([0-9a-f]{12,64})$/;

/** One message of the engine's build stream. */
interface BuildMessage {
  stream?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}

/** Whether a path of the build context is left out of it. */
type Excluded = (path: string) => boolean;

/**
 * What the checkout's `.dockerignore` leaves out of a Dockerfile build's context, as the
 * docker client does: the Dockerfile and `.dockerignore` themselves are always sent. A
 * directory is left out whole unless the file has exceptions (`!pattern`), which may bring
 * back something inside it.
 */
async function dockerignoreOf(directory: string): Promise<Excluded> {
  let text: string;
  try {
    const path = join(directory, '.dockerignore');
    if (!(await lstat(path)).isFile()) return () => false;
    text = await readFile(path, 'utf8');
  } catch {
    return () => false;
  }
  const rules = ignore().add(text);
  const exceptions = text.split(/\r?\n/).some((line) => line.trim().startsWith('!'));
  return (path: string) => {
    const name = relative(directory, path);
    if (name === '' || name === 'Dockerfile' || name === '.dockerignore' || !rules.ignores(name)) return false;
    // With exceptions, a directory is walked: something inside it may be brought back.
    return !(exceptions && lstatSync(path).isDirectory());
  };
}

/** Sums the sizes of a directory's entries without following links; stops counting past `limit`. */
export async function sizeOf(directory: string, limit: number, excluded: Excluded): Promise<number> {
  let total = 0;
  const pending = [directory];
  while (pending.length > 0 && total <= limit) {
    const dir = pending.pop() as string;
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (excluded(path)) continue;
      if (entry.isDirectory()) pending.push(path);
      total += entry.isFile() ? (await lstat(path)).size : 512;
    }
  }
  return total;
}

const messageOf = buildErrorMessage;

const statusOf = (error: unknown): number | undefined =>
  error !== null && typeof error === 'object' ? (error as { statusCode?: number }).statusCode : undefined;

/**
 * Builds pushed commits into images with a Docker Engine: a commit with a Dockerfile is
 * built by the engine's classic builder (its `.dockerignore` applied); a commit with only a Procfile is laid onto the
 * stack image as one layer (`/app`). Builds run without cache (no tenant's layers serve
 * another's), in containers with a memory limit, CPU shares, a network of the operator's
 * choice and a time limit; a failed build leaves no image behind.
 */
export class DockerImageBuilder implements ImageBuilder {
  private readonly options: Required<Omit<DockerImageBuilderOptions, 'registry' | 'registryLogin' | 'registryAllow' | 'cgroupParent' | 'cgroupRoot' | 'cgroupMaker'>>;
  private readonly cgroups: { local: BuildCgroups; engine: EngineBuildCgroups; root: string; maker: 'auto' | 'local' | 'engine' };
  private readonly allowedRegistries: readonly string[];
  private readonly registry: string | null;
  private readonly login: RegistryLogin | null;

  constructor(
    private readonly docker: Docker,
    options: DockerImageBuilderOptions,
  ) {
    const timeoutMs = options.timeoutMs ?? 10 * 60_000;
    this.options = {
      stackImage: options.stackImage,
      appUid: options.appUid ?? APP_UID,
      memoryBytes: options.memoryBytes ?? 1024 * MIB,
      cpuShares: options.cpuShares ?? 512,
      timeoutMs,
      contextLimitBytes: options.contextLimitBytes ?? 256 * MIB,
      network: options.network ?? 'none',
      outputLimitBytes: options.outputLimitBytes ?? MIB,
      leftoverAgeMs: options.leftoverAgeMs ?? 2 * timeoutMs,
      imageLimitBytes: options.imageLimitBytes ?? 2048 * MIB,
      pidsLimit: options.pidsLimit ?? 512,
      cpus: options.cpus ?? 1,
      requireUserNamespaces: options.requireUserNamespaces ?? true,
    };
    const root = options.cgroupRoot ?? CGROUP_ROOT;
    const parent = options.cgroupParent ?? BUILD_CGROUP_PARENT;
    this.cgroups = {
      local: new BuildCgroups(root, parent),
      engine: new EngineBuildCgroups(docker, options.stackImage, parent),
      root,
      maker: options.cgroupMaker ?? 'auto',
    };
    this.registry = options.registry?.replace(/\/+$/, '') || null;
    this.allowedRegistries = [...(options.registryAllow ?? []), ...(this.registry === null ? [] : [this.registry])];
    this.login = this.registry !== null && options.registryLogin ? { registry: this.registry, ...options.registryLogin } : null;
  }

  async build(request: ImageBuildRequest, output: (line: string) => void): Promise<string> {
    const limit = this.options.contextLimitBytes;
    const excluded = request.kind === 'dockerfile' ? await dockerignoreOf(request.directory) : () => false;
    if ((await sizeOf(request.directory, limit, excluded)) > limit) {
      throw buildFailed(`the commit's files take more than ${Math.floor(limit / MIB)} MiB, the most a build may send to the engine.`);
    }
    let dockerfile: string | null = null;
    if (request.kind === 'dockerfile') {
      if (this.options.requireUserNamespaces) await assertEngineConfinesBuilds(this.docker);
      await assertEngineTakesBuildCgroups(this.docker);
      const read = await assertBuildReferences(this.docker, request, this.allowedRegistries, this.login);
      dockerfile = labelStages(read.text, read.stageLines, { [APP_LABEL]: request.app, [APP_UUID_LABEL]: request.appUuid });
    }
    // A Dockerfile's steps run the tenant's commands: all of them in one cgroup of this build's own.
    const cgroup = dockerfile !== null ? await this.buildCgroup() : null;
    const context = dockerfile !== null ? this.dockerfileContext(request.directory, excluded, dockerfile) : this.stackContext(request.directory);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.options.timeoutMs);
    const seen: string[] = [];
    let id: string;
    try {
      id = await this.run(request, context, cgroup, abort.signal, output, seen);
      await this.assertImageSize(id);
    } catch (error) {
      clearTimeout(timer);
      await this.removeLayers(seen);
      if (abort.signal.aborted) {
        throw buildFailed(`it took longer than ${Math.round(this.options.timeoutMs / 1000)} seconds, the most a build may take.`);
      }
      throw error;
    } finally {
      context.destroy();
      await cgroup?.remove();
    }
    if (this.registry === null) {
      clearTimeout(timer);
      return id;
    }
    try {
      return await pushBuild(this.docker, request.app, id, { registry: this.registry, login: this.login, signal: abort.signal, timeoutMs: this.options.timeoutMs }, output);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Why no image can be built now: the engine does not answer (within 5 s); null when it does. */
  async whyBuildsCannotRun(): Promise<string | null> {
    const reason = await pingEngine(this.docker, 5000);
    return reason === null ? null : `image builds cannot run: the Docker engine does not answer (${reason}): start it, or set DOCKER_HOST to where it runs`;
  }

  async tag(image: string, reference: string): Promise<void> {
    const colon = reference.lastIndexOf(':');
    await this.docker.getImage(image).tag({ repo: reference.slice(0, colon), tag: reference.slice(colon + 1) });
  }

  async remove(image: string): Promise<void> {
    try {
      // A reference by digest names the image without being one of its names: remove by id.
      const id = isDigestReference(image) ? (await this.docker.getImage(image).inspect()).Id : image;
      await this.docker.getImage(id).remove({ force: true });
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
  }

  async prune(app: string, keep: readonly string[]): Promise<string[]> {
    const images = await this.docker.listImages({ filters: JSON.stringify({ label: [`${APP_LABEL}=${app}`] }) });
    const removed: string[] = [];
    const now = Date.now();
    for (const image of images) {
      if (image.Labels?.[APP_LABEL] !== app) continue;
      const names = (image.RepoTags ?? []).filter((tag) => tag !== '<none>:<none>');
      const digests = (image.RepoDigests ?? []).filter((digest) => !digest.startsWith('<none>'));
      if (names.some((name) => keep.includes(name)) || digests.some((digest) => keep.includes(digest))) continue;
      // An unnamed image is an interrupted build's, once no build could still be naming it.
      if (names.length === 0 && now - image.Created * 1000 < this.options.leftoverAgeMs) continue;
      // A name given by anyone else than this builder stays, and with it the image.
      if (names.some((name) => !isReleaseImage(app, name) && !this.isPushedName(app, name))) continue;
      try {
        if (names.length === 0) await this.docker.getImage(image.Id).remove();
        for (const name of names) await this.docker.getImage(name).remove();
        removed.push(...names);
      } catch (error) {
        // A container still uses it (409) or it is gone already (404): the next prune tries again.
        if (statusOf(error) !== 409 && statusOf(error) !== 404) throw error;
      }
    }
    return removed.sort();
  }

  /** Removes every image built for the app with that id and uuid (a deleted app's), in use or not; another app's of the same id stay. */
  async removeApp(app: string, appUuid: string): Promise<void> {
    const images = await this.docker.listImages({ all: true, filters: JSON.stringify({ label: [`${APP_LABEL}=${app}`, `${APP_UUID_LABEL}=${appUuid}`] }) });
    // Newest first: an image's parents go once their children have.
    for (const image of images.sort((a, b) => b.Created - a.Created)) {
      try {
        await this.docker.getImage(image.Id).remove({ force: true });
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
      }
    }
  }

  /** Whether `name` is one this builder pushed a build of `app` under (`<registry>/<app>:build-<id>`). */
  private isPushedName(app: string, name: string): boolean {
    const repository = `${this.registry ?? ''}/${app}:`;
    return this.registry !== null && name.startsWith(repository) && PUSHED_TAG.test(name.slice(repository.length));
  }

  /** The build context of a Dockerfile commit: its files less those ignored, its Dockerfile replaced by the labelled one. */
  private dockerfileContext(directory: string, excluded: Excluded, dockerfile: string): Readable & { destroy(): void } {
    const own = join(directory, 'Dockerfile');
    return pack(directory, {
      ignore: (path) => path === own || excluded(path),
      finalize: false,
      finish: (tar) => {
        tar.entry({ name: 'Dockerfile', mode: 0o644 }, dockerfile);
        tar.finalize();
      },
    });
  }

  /** The build context of a Procfile-only commit: its files under `app/`, and a Dockerfile laying them onto the stack. */
  private stackContext(directory: string): Readable & { destroy(): void } {
    const uid = this.options.appUid;
    const dockerfile = [
      `FROM ${this.options.stackImage}`,
      `COPY --chown=${uid}:${uid} app/ /app/`,
      'WORKDIR /app',
      `USER ${uid}:${uid}`,
      '',
    ].join('\n');
    return pack(directory, {
      map: (header) => ({ ...header, name: `app/${header.name}` }),
      finalize: false,
      finish: (tar) => {
        tar.entry({ name: 'Dockerfile', mode: 0o644 }, dockerfile);
        tar.finalize();
      },
    });
  }

  /**
   * Makes the cgroup of one Dockerfile build, itself or through the engine.
   * @throws RequestRejected `BUILD.FAILED` when it cannot be made.
   */
  private async buildCgroup(): Promise<BuildCgroup> {
    const { pidsLimit: pids, memoryBytes, cpus } = this.options;
    const { maker, root } = this.cgroups;
    // An engine on a local socket runs on this machine; one over TCP may not.
    const onSocket = typeof (this.docker.modem as { socketPath?: unknown }).socketPath === 'string';
    const local = maker === 'local' || (maker === 'auto' && onSocket && (await cgroupsWritable(root)));
    try {
      return await (local ? this.cgroups.local : this.cgroups.engine).create({ pids, memoryBytes, cpus });
    } catch (error) {
      throw buildFailed(`Dockerfile builds are refused: the build's own cgroup could not be made: ${messageOf(error)}`);
    }
  }

  /** Refuses an image larger than the limit; the caller removes its layers. */
  private async assertImageSize(id: string): Promise<void> {
    const limit = this.options.imageLimitBytes;
    const size = (await this.docker.getImage(id).inspect()).Size;
    if (size <= limit) return;
    await this.docker.getImage(id).remove({ force: true }).catch(() => undefined);
    throw buildFailed(`the image takes ${Math.ceil(size / MIB)} MiB, more than the ${Math.floor(limit / MIB)} MiB a build may make.`);
  }

  /** Runs the engine's build and follows its output; resolves with the image's id. */
  private async run(
    request: ImageBuildRequest,
    context: Readable,
    cgroup: BuildCgroup | null,
    signal: AbortSignal,
    output: (line: string) => void,
    seen: string[],
  ): Promise<string> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = await this.docker.buildImage(context, {
        labels: { [APP_LABEL]: request.app, [APP_UUID_LABEL]: request.appUuid },
        nocache: true,
        rm: true,
        forcerm: true,
        pull: false,
        memory: this.options.memoryBytes,
        memswap: this.options.memoryBytes,
        cpushares: this.options.cpuShares,
        cpuperiod: 100_000,
        cpuquota: Math.round(100_000 * this.options.cpus),
        ...(cgroup !== null ? { cgroupparent: cgroup.parent } : {}),
        networkmode: this.options.network,
        abortSignal: signal,
      } as Docker.ImageBuildOptions);
    } catch (error) {
      const status = statusOf(error);
      // The engine refuses what it cannot build (a Dockerfile it cannot parse) before streaming.
      if (status !== undefined && status >= 400 && status < 500) throw buildFailed(messageOf(error).trim());
      throw error;
    }
    const say = limitedOutput(output, this.options.outputLimitBytes);
    let id: string | null = null;
    let failure: string | null = null;
    let fromStep = false;
    let pending = '';
    const onText = (text: string): void => {
      pending += text;
      let end: number;
      while ((end = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, end).replace(CONTROL, '').trimEnd();
        pending = pending.slice(end + 1);
        const step = STEP.exec(line);
        if (step !== null) fromStep = step[1]?.toUpperCase() === 'FROM';
        const layer = LAYER.exec(line);
        // The layer a FROM step names is the base image, never this build's to remove.
        if (layer !== null && !fromStep) seen.push(layer[1] as string);
        if (line !== '') say(line);
      }
    };
    await new Promise<void>((resolve, reject) => {
      let buffered = '';
      stream.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        let end: number;
        while ((end = buffered.indexOf('\n')) >= 0) {
          const raw = buffered.slice(0, end).trim();
          buffered = buffered.slice(end + 1);
          if (raw === '') continue;
          let message: BuildMessage;
          try {
            message = JSON.parse(raw) as BuildMessage;
          } catch {
            continue;
          }
          if (typeof message.stream === 'string') onText(message.stream);
          if (typeof message.aux?.ID === 'string') id = message.aux.ID;
          if (message.error !== undefined || message.errorDetail !== undefined) failure = message.errorDetail?.message ?? message.error ?? 'the build failed';
        }
      });
      stream.on('end', () => resolve());
      stream.on('close', () => resolve());
      stream.on('error', (error: Error) => reject(error));
    });
    if (pending !== '') onText('\n');
    if (signal.aborted) throw new Error('The build was stopped');
    if (failure !== null) {
      say(`The build failed: ${String(failure).replace(CONTROL, '').trim()}`);
      throw buildFailed(String(failure).replace(CONTROL, '').trim());
    }
    if (id === null) throw new Error('The engine finished the build without naming an image');
    return id;
  }

  /** Removes the layers a failed build made, newest first; a layer another image needs stays. */
  private async removeLayers(layers: readonly string[]): Promise<void> {
    for (const layer of [...layers].reverse()) {
      try {
        const image = await this.docker.getImage(layer).inspect();
        if ((image.RepoTags ?? []).length > 0) continue;
        await this.docker.getImage(layer).remove();
      } catch {
        // Gone already (removing a child prunes its unnamed parents), or in use: nothing to do.
      }
    }
  }
}
