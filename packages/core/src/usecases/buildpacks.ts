import { DomainError, RequestRejected, Unavailable } from '../errors';
import type { Procfile } from '../model/entities';
import type { BuildpackCatalog, CompiledSource, CompileRequest, InstalledBuildpack, SourceCompiler } from '../ports/builds';
import {
  BUILDPACK_UNKNOWN,
  BUILDPACK_VARIABLE,
  mergeProcessTypes,
  noBuildpackDetected,
  parseBuildpackChoice,
  parseBuildpackRelease,
} from '../rules/buildpacks';
import { NOTHING_TO_RUN, NOTHING_TO_RUN_CODE } from '../rules/sources';
import type { Settings } from './context';

/** The ports of a buildpack build: both are needed. */
export interface BuildpackPorts {
  compiler: SourceCompiler;
  buildpacks: BuildpackCatalog;
}

/** A compiled commit: what it runs and the process types it runs. */
export interface CompiledBuild {
  source: CompiledSource;
  /** The buildpack's default process types overridden by the app's Procfile. */
  procfile: Procfile;
  /** The name the detecting buildpack gave (its `bin/detect` output). */
  detected: string;
}

/** Any failure that is not the domain's own is the build machinery's: a 503 saying what failed. */
function builderFailure(action: string, error: unknown): DomainError {
  if (DomainError.is(error)) return error;
  return new Unavailable('BUILDER.FAILED', `The buildpack build failed to ${action}: ${error instanceof Error ? error.message : String(error)}`);
}

/**
 * The buildpacks a build tries, from the app's `BUILDPACK_URL`: every installed one in order
 * when unset, the installed one it names, or the one fetched from the URL it gives (only
 * when the operator's allow-list admits the URL).
 * @throws RequestRejected `BUILD.BUILDPACK_NOT_ALLOWED`, `BUILD.BUILDPACK_UNKNOWN` (with the
 *   installed names), `BUILD.BUILDPACK_FETCH`; Unavailable `BUILDER.FAILED`.
 */
export async function chooseBuildpacks(
  catalog: BuildpackCatalog,
  settings: Pick<Settings, 'buildpackUrlAllow'>,
  config: Record<string, string>,
  output: (line: string) => void,
): Promise<InstalledBuildpack[]> {
  const choice = parseBuildpackChoice(config[BUILDPACK_VARIABLE], settings.buildpackUrlAllow);
  if (choice.kind === 'url') {
    output(`Fetching the buildpack ${choice.url}${choice.ref === null ? '' : `#${choice.ref}`}`);
    try {
      return [await catalog.fetch(choice.url, choice.ref, output)];
    } catch (error) {
      throw builderFailure(`fetch ${choice.url}`, error);
    }
  }
  let installed: InstalledBuildpack[];
  try {
    installed = await catalog.installed();
  } catch (error) {
    throw builderFailure('list the installed buildpacks', error);
  }
  if (choice.kind === 'auto') return installed;
  const named = installed.find((buildpack) => buildpack.name === choice.name);
  if (named === undefined) {
    const names = installed.map((buildpack) => buildpack.name).join(', ') || 'none';
    throw new RequestRejected(
      BUILDPACK_UNKNOWN,
      `${BUILDPACK_VARIABLE} names the buildpack "${choice.name}", which is not installed here. Installed: ${names}.`,
    );
  }
  return [named];
}

/**
 * Compiles a commit with buildpacks: opens a build, asks each candidate's `bin/detect` in
 * order until one answers, runs its `bin/compile` (its output sent to `output`) and its
 * `bin/release`, and keeps the result. Every step is said to `output`. On any failure
 * the build is discarded, so nothing of it is left.
 * @throws RequestRejected `BUILD.NO_BUILDPACK` (naming what was tried), `BUILD.FAILED`,
 *   `BUILD.RELEASE_INVALID`, `BUILD.NOTHING_TO_RUN` (no process type from either the buildpack
 *   or the Procfile), and those of `chooseBuildpacks`; Unavailable `BUILDER.FAILED`.
 */
export async function compileSource(
  ports: BuildpackPorts,
  settings: Pick<Settings, 'buildpackUrlAllow'>,
  request: CompileRequest,
  procfile: Procfile,
  output: (line: string) => void,
): Promise<CompiledBuild> {
  const candidates = await chooseBuildpacks(ports.buildpacks, settings, request.env, output);
  if (candidates.length === 0) throw noBuildpackDetected([]);
  let session;
  try {
    session = await ports.compiler.open(request);
  } catch (error) {
    throw builderFailure('open a build', error);
  }
  let finished = false;
  let source: CompiledSource;
  let merged: Procfile;
  let detected = '';
  try {
    let chosen: InstalledBuildpack | null = null;
    for (const buildpack of candidates) {
      const answer = await session.detect(buildpack);
      if (answer !== null) {
        chosen = buildpack;
        detected = answer.trim() || buildpack.name;
        break;
      }
    }
    if (chosen === null) throw noBuildpackDetected(candidates);
    output(`Detected ${detected}`);
    output(`Compiling with ${chosen.name}`);
    await session.compile(chosen, output);
    const defaults = parseBuildpackRelease(await session.release(chosen));
    merged = mergeProcessTypes(defaults, procfile);
    if (Object.keys(merged).length === 0) {
      throw new RequestRejected(NOTHING_TO_RUN_CODE, `The buildpack ${chosen.name} declares no default process type. ${NOTHING_TO_RUN}`);
    }
    output(`Process types: ${describeTypes(defaults, procfile)}`);
    finished = true;
    source = await session.finish(output);
  } catch (error) {
    // Whatever the session made goes, even when keeping it was the step that failed.
    await session.discard();
    throw builderFailure(finished ? 'keep the compiled app' : 'compile the app', error);
  }
  if (source.image === null && source.workdir === null) {
    throw new Unavailable('BUILDER.FAILED', 'The buildpack build kept neither an image nor a directory.');
  }
  return { source, procfile: merged, detected };
}

/** `web (from the buildpack), worker (from the Procfile)`. */
function describeTypes(defaults: Procfile, procfile: Procfile): string {
  const types = Object.keys(mergeProcessTypes(defaults, procfile));
  return types.map((type) => `${type} (from the ${Object.hasOwn(procfile, type) ? 'Procfile' : 'buildpack'})`).join(', ');
}
