import { join } from 'node:path';
import { ContainerModule } from 'inversify';
import { TOKENS, type BuildpackCatalog, type SourceCompiler } from '@svc/core';
import { BUILTIN_BUILDPACKS_DIR, GitBuildpackCatalog } from '@svc/buildpacks-git';
import { ProcessSourceCompiler, type ProcessScheduler } from '@svc/scheduler-process';
import { DockerSourceCompiler, UNCONFINED_ENGINE, checkStackImage, engineConfinesBuilds, type Docker, type RegistryLogin } from '@svc/scheduler-docker';
import type { BuildpackSettings } from './config-buildpacks';
import type { ImageBuildSettings } from './config';

/** Where and how pushed commits are compiled with buildpacks. */
export interface BuildpackSetup extends BuildpackSettings {
  /** DATA_DIR: fetched buildpacks (BUILDPACK_URL) are kept in `buildpacks/`, build caches in `build-cache/`. */
  dataDir: string;
}

/** What compiles with buildpacks: the process sandbox, a Docker engine (image builds), or none (then pushed commits run as they are). */
export type CompilerKind = 'process' | 'docker' | 'none';

/** What the Docker compiler takes from the image builds' settings and the server. */
export interface DockerCompileSetup {
  engine: () => Docker;
  /** DOCKER_HOST, for the stack image's recipe; null: the client's default. */
  dockerHost: string | null;
  images: ImageBuildSettings;
  registryLogin: RegistryLogin | null;
}

/**
 * The buildpack catalog (the operator's buildpacks, the built-in ones, those fetched from
 * allowed URLs) and the compiler that runs their steps where the app's code runs, confined
 * like it: in the process sandbox as the app's user (SCHEDULER=process), or in a throwaway
 * container of the stack image on the build network (image builds on a Docker engine).
 */
export const buildsModule = (setup: BuildpackSetup | null, kind: CompilerKind, processScheduler: () => ProcessScheduler, docker: DockerCompileSetup | null) =>
  new ContainerModule(({ bind }) => {
    bind<BuildpackCatalog | null>(TOKENS.BuildpackCatalog).toDynamicValue(() =>
      setup === null ? null : new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, operatorDir: setup.dir ?? undefined, fetchDir: join(setup.dataDir, 'buildpacks') }),
    );
    bind<SourceCompiler | null>(TOKENS.SourceCompiler).toDynamicValue(() => {
      if (setup === null || kind === 'none') return null;
      if (kind === 'docker') {
        if (docker === null) throw new Error('Buildpack builds on an engine need the image builds\' setup');
        return new DockerSourceCompiler({
          docker: docker.engine(),
          stackImage: docker.images.stackImage,
          dockerHost: docker.dockerHost,
          timeoutMs: docker.images.timeoutMs,
          memoryBytes: docker.images.memoryBytes,
          cacheLimitBytes: setup.cacheLimitBytes,
          imageLimitBytes: setup.imageLimitBytes,
          network: setup.network,
          bridge: setup.bridge,
          buildAllowed: setup.networkAllow,
          guards: docker.images.guards,
          registry: docker.images.registry,
          registryLogin: docker.registryLogin,
        });
      }
      return new ProcessSourceCompiler({ scheduler: processScheduler(), dataDir: setup.dataDir, cacheLimitBytes: setup.cacheLimitBytes, imageLimitBytes: setup.imageLimitBytes });
    });
  });

/** The structured logger the start-up of builds writes to. */
interface BuildsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * At start-up, with builds on an engine: says whether the engine confines Dockerfile builds
 * and whether the stack image is there or will be made on first need, makes the build network
 * and its guards, and removes build containers a stopped controller left. Nothing here is
 * fatal, nor said twice: what keeps builds from running (the network, its guards, a stack
 * image that cannot be made) is found and said by the build check that follows
 * (build-readiness.ts), and builds retry the network at their start. Returns what only some
 * builds lack, for `/readyz` `warnings` (an engine that runs Dockerfile builds' steps as
 * root), or null.
 */
export async function prepareEngineBuilds(compiler: SourceCompiler | null, setup: DockerCompileSetup | null, logger: BuildsLogger): Promise<string | null> {
  if (setup === null) return null;
  // Dockerfile builds run tenants' steps as the engine's root: refused unless it is remapped.
  const confined = await engineConfinesBuilds(setup.engine()).catch(() => null);
  if (confined === false) logger.warn({}, UNCONFINED_ENGINE);
  else if (confined === true) logger.info({}, 'the Docker engine confines build steps (user-namespace remapping or rootless): Dockerfile builds are on');
  const warning = confined === false ? UNCONFINED_ENGINE : null;
  if (!(compiler instanceof DockerSourceCompiler)) return warning;
  const stack = await checkStackImage({ docker: setup.engine(), image: setup.images.stackImage, dockerHost: setup.dockerHost }).catch(() => null);
  if (stack !== null && stack.state !== 'missing') logger.info({ stackImage: setup.images.stackImage, state: stack.state }, stack.message);
  // A network that cannot be made or guarded is said, with its fix, by the build check that follows.
  const prepared = await compiler.prepare().then(
    () => true,
    () => false,
  );
  if (!prepared) return warning;
  try {
    const removed = await compiler.removeLeftovers();
    if (removed > 0) logger.warn({ removed }, 'removed build containers an earlier controller process left');
  } catch (error) {
    logger.warn({ err: error }, `build containers an earlier controller process left could not be removed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return warning;
}
