import { DomainError, RequestRejected, Unavailable } from '../errors';
import type { Procfile } from '../model/entities';
import type { BuildpackCatalog, CompiledSource, CompileRequest, CompileSession, InstalledBuildpack, SourceCompiler } from '../ports/builds';
import {
  BUILDPACKS_FILE,
  BUILDPACK_UNKNOWN,
  BUILDPACK_VARIABLE,
  listedBuildpackNotDetected,
  mergeProcessTypes,
  noBuildpackDetected,
  parseBuildpackChoice,
  parseBuildpackRelease,
  parseBuildpacksFile,
  type BuildpackChoice,
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
  /** The name the detecting buildpack gave (its `bin/detect` output); those of every listed one, comma-separated, for a `.buildpacks` build. */
  detected: string;
}

/** Any failure that is not the domain's own is the build machinery's: a 503 saying what failed. */
function builderFailure(action: string, error: unknown): DomainError {
  if (DomainError.is(error)) return error;
  return new Unavailable('BUILDER.FAILED', `The buildpack build failed to ${action}: ${error instanceof Error ? error.message : String(error)}`);
}

/** The installed buildpacks, or the build machinery's failure to list them. */
async function installedBuildpacks(catalog: BuildpackCatalog): Promise<InstalledBuildpack[]> {
  try {
    return await catalog.installed();
  } catch (error) {
    throw builderFailure('list the installed buildpacks', error);
  }
}

/** The buildpack a named or URL choice designates: the installed one of that name, or the one fetched from the URL. */
async function resolveChoice(
  catalog: BuildpackCatalog,
  choice: Exclude<BuildpackChoice, { kind: 'auto' }>,
  installed: () => Promise<InstalledBuildpack[]>,
  source: string,
  output: (line: string) => void,
): Promise<InstalledBuildpack> {
  if (choice.kind === 'url') {
    output(`Fetching the buildpack ${choice.url}${choice.ref === null ? '' : `#${choice.ref}`}`);
    try {
      return await catalog.fetch(choice.url, choice.ref, output);
    } catch (error) {
      throw builderFailure(`fetch ${choice.url}`, error);
    }
  }
  const all = await installed();
  const named = all.find((buildpack) => buildpack.name === choice.name);
  if (named === undefined) {
    const names = all.map((buildpack) => buildpack.name).join(', ') || 'none';
    throw new RequestRejected(BUILDPACK_UNKNOWN, `${source} names the buildpack "${choice.name}", which is not installed here. Installed: ${names}.`);
  }
  return named;
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
  if (choice.kind === 'auto') return installedBuildpacks(catalog);
  return [await resolveChoice(catalog, choice, () => installedBuildpacks(catalog), BUILDPACK_VARIABLE, output)];
}

/**
 * The buildpacks a commit's `.buildpacks` lists, in order: each an installed one or one
 * fetched from an admitted URL. Every one runs, in that order.
 * @throws RequestRejected `BUILD.BUILDPACK_NOT_ALLOWED`, `BUILD.BUILDPACK_UNKNOWN`,
 *   `BUILD.BUILDPACK_FETCH`; Unavailable `BUILDER.FAILED`.
 */
export async function listedBuildpacks(
  catalog: BuildpackCatalog,
  settings: Pick<Settings, 'buildpackUrlAllow'>,
  text: string,
  output: (line: string) => void,
): Promise<InstalledBuildpack[]> {
  const choices = parseBuildpacksFile(text, settings.buildpackUrlAllow);
  let installed: Promise<InstalledBuildpack[]> | null = null;
  const once = (): Promise<InstalledBuildpack[]> => (installed ??= installedBuildpacks(catalog));
  const result: InstalledBuildpack[] = [];
  for (const choice of choices) result.push(await resolveChoice(catalog, choice, once, BUILDPACKS_FILE, output));
  return result;
}

/**
 * Compiles a commit with buildpacks: opens a build, asks each candidate's `bin/detect` in
 * order until one answers, runs its `bin/compile` (its output sent to `output`) and its
 * `bin/release`, and keeps the result. With `listed` (the commit's `.buildpacks`) and no
 * `BUILDPACK_URL`, every buildpack it lists runs instead, in order, each detected and then
 * compiled on what the ones before it left; the last one's `bin/release` gives the default
 * process types (as Heroku does with several buildpacks). Every step is said to `output`. On
 * any failure the build is discarded, so nothing of it is left.
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
  listed: string | null = null,
): Promise<CompiledBuild> {
  const everyListed = listed !== null && (request.env[BUILDPACK_VARIABLE] ?? '').trim() === '';
  if (listed !== null && !everyListed) output(`${BUILDPACK_VARIABLE} is set: ${BUILDPACKS_FILE} is not used`);
  const candidates = everyListed ? await listedBuildpacks(ports.buildpacks, settings, listed, output) : await chooseBuildpacks(ports.buildpacks, settings, request.env, output);
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
    const compiled = everyListed ? await compileEvery(session, candidates, output) : await compileFirstDetected(session, candidates, output);
    const chosen = compiled.last;
    detected = compiled.detected;
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

/** The buildpack whose `bin/release` a build uses, and what `bin/detect` named the app. */
interface Compiled {
  last: InstalledBuildpack;
  detected: string;
}

/** Compiles with the first candidate whose `bin/detect` takes the app. */
async function compileFirstDetected(session: CompileSession, candidates: InstalledBuildpack[], output: (line: string) => void): Promise<Compiled> {
  for (const buildpack of candidates) {
    const answer = await session.detect(buildpack);
    if (answer === null) continue;
    const detected = answer.trim() || buildpack.name;
    output(`Detected ${detected}`);
    output(`Compiling with ${buildpack.name}`);
    await session.compile(buildpack, output);
    return { last: buildpack, detected };
  }
  throw noBuildpackDetected(candidates);
}

/** Detects and compiles with every listed buildpack in order, each on what the ones before it left. */
async function compileEvery(session: CompileSession, listed: InstalledBuildpack[], output: (line: string) => void): Promise<Compiled> {
  const names: string[] = [];
  let last: InstalledBuildpack | null = null;
  for (const buildpack of listed) {
    const answer = await session.detect(buildpack);
    if (answer === null) throw listedBuildpackNotDetected(buildpack.name);
    const name = answer.trim() || buildpack.name;
    names.push(name);
    output(`Detected ${name} (${BUILDPACKS_FILE}, ${names.length} of ${listed.length})`);
    output(`Compiling with ${buildpack.name}`);
    await session.compile(buildpack, output);
    last = buildpack;
  }
  if (last === null) throw noBuildpackDetected([]);
  return { last, detected: names.join(', ') };
}

/** `web (from the buildpack), worker (from the Procfile)`. */
function describeTypes(defaults: Procfile, procfile: Procfile): string {
  const types = Object.keys(mergeProcessTypes(defaults, procfile));
  return types.map((type) => `${type} (from the ${Object.hasOwn(procfile, type) ? 'Procfile' : 'buildpack'})`).join(', ');
}
