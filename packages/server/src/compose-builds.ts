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
          network: setup.network,
          bridge: setup.bridge,
          guards: docker.images.guards,
          registry: docker.images.registry,
          registryLogin: docker.registryLogin,
        });
      }
      return new ProcessSourceCompiler({ scheduler: processScheduler(), dataDir: setup.dataDir, cacheLimitBytes: setup.cacheLimitBytes });
    });
  });

/** The structured logger the start-up of builds writes to. */
interface BuildsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * At start-up, with buildpack builds on an engine: says whether the stack image is there or
 * will be made on first need (or names the command that makes it), makes the build network
 * and its guards, and removes build containers a stopped controller left. A failure is logged,
 * not fatal: builds retry the network at their start, and refuse while it cannot be made.
 * Returns why builds cannot run (the stack image missing and not makeable here), for
 * `/readyz`, or null.
 */
export async function prepareEngineBuilds(compiler: SourceCompiler | null, setup: DockerCompileSetup | null, logger: BuildsLogger): Promise<string | null> {
  if (setup !== null) {
    // Dockerfile builds run tenants' steps as the engine's root: refused unless it is remapped.
    const confined = await engineConfinesBuilds(setup.engine()).catch(() => null);
    if (confined === false) logger.warn({}, UNCONFINED_ENGINE);
    else if (confined === true) logger.info({}, 'the Docker engine confines build steps (user-namespace remapping or rootless): Dockerfile builds are on');
  }
  if (!(compiler instanceof DockerSourceCompiler) || setup === null) return null;
  const stack = await checkStackImage({ docker: setup.engine(), image: setup.images.stackImage, dockerHost: setup.dockerHost }).catch((error: unknown) => ({
    state: 'unknown',
    message: `the stack image ${setup.images.stackImage} could not be checked: ${error instanceof Error ? error.message : String(error)}`,
  }));
  (stack.state === 'present' || stack.state === 'will-make' ? logger.info : logger.warn).call(logger, { stackImage: setup.images.stackImage, state: stack.state }, stack.message);
  try {
    await compiler.prepare();
    const removed = await compiler.removeLeftovers();
    if (removed > 0) logger.warn({ removed }, 'removed build containers an earlier controller process left');
  } catch (error) {
    logger.warn({ err: error }, `the build network could not be made: buildpack builds are refused until it can (${error instanceof Error ? error.message : String(error)})`);
  }
  return stack.state === 'present' || stack.state === 'will-make' ? null : stack.message;
}
