import { join } from 'node:path';
import { ContainerModule } from 'inversify';
import { TOKENS, type BuildpackCatalog, type SourceCompiler } from '@svc/core';
import { BUILTIN_BUILDPACKS_DIR, GitBuildpackCatalog } from '@svc/buildpacks-git';
import { ProcessSourceCompiler, type ProcessScheduler } from '@svc/scheduler-process';
import type { BuildpackSettings } from './config-buildpacks';

/** Where and how pushed commits are compiled with buildpacks. */
export interface BuildpackSetup extends BuildpackSettings {
  /** DATA_DIR: fetched buildpacks (BUILDPACK_URL) are kept in `buildpacks/`, build caches in `build-cache/`. */
  dataDir: string;
}

/** What compiles with buildpacks: the process sandbox, or none (then pushed commits run as they are). */
export type CompilerKind = 'process' | 'none';

/**
 * The buildpack catalog (the operator's buildpacks, the built-in ones, those fetched from
 * allowed URLs) and the compiler that runs their steps where the app's code runs, confined
 * like it: in the process sandbox as the app's user (SCHEDULER=process).
 */
export const buildsModule = (setup: BuildpackSetup | null, kind: CompilerKind, processScheduler: () => ProcessScheduler) =>
  new ContainerModule(({ bind }) => {
    bind<BuildpackCatalog | null>(TOKENS.BuildpackCatalog).toDynamicValue(() =>
      setup === null ? null : new GitBuildpackCatalog({ builtinDir: BUILTIN_BUILDPACKS_DIR, operatorDir: setup.dir ?? undefined, fetchDir: join(setup.dataDir, 'buildpacks') }),
    );
    bind<SourceCompiler | null>(TOKENS.SourceCompiler).toDynamicValue(() => {
      if (setup === null || kind === 'none') return null;
      return new ProcessSourceCompiler({ scheduler: processScheduler(), dataDir: setup.dataDir, cacheLimitBytes: setup.cacheLimitBytes });
    });
  });
