import { RequestRejected, ValidationFailed } from '../errors';
import type { Build, Procfile } from '../model/entities';
import { PROCESS_TYPE_PATTERN } from './config';

/** The largest Procfile a pushed commit may have, in characters. */
export const PROCFILE_MAX_LENGTH = 64 * 1024;
/** The largest Dockerfile a pushed commit may have, in characters (as for builds created through the API). */
export const DOCKERFILE_MAX_LENGTH = 1024 * 1024;
/** A full commit id, as git names the commit a branch points to. */
export const COMMIT_SHA_PATTERN = /^[0-9a-f]{40}$/;

/** The code of a push that gives the platform nothing to run. */
export const NOTHING_TO_RUN_CODE = 'BUILD.NOTHING_TO_RUN';
/** The message of a push that gives the platform nothing to run. */
export const NOTHING_TO_RUN =
  'The pushed commit has neither a Procfile nor a Dockerfile, so there is nothing to run. '
  + 'Add a Procfile at the top of the repository with one line per process type, e.g. "web: node server.js", commit it and push again.';

const PROCFILE_LINE = /^([^:\s]+)[ \t]*:[ \t]*(.*)$/;

/**
 * Adds `type: command` to a Procfile being read (a Procfile, a buildpack's default process
 * types), or says at `where` in `problems` why it cannot: a type that is not a process type's
 * name, an empty command, a type declared twice.
 */
export function addProcessType(procfile: Procfile, type: string, command: string, where: string, problems: string[]): void {
  if (!PROCESS_TYPE_PATTERN.test(type)) {
    problems.push(`${where}: process types can only contain [a-z0-9-_] and must start and end with a letter or digit, got "${type.slice(0, 64)}".`);
  } else if (command.trim() === '') {
    problems.push(`${where}: the process type ${type} has no command.`);
  } else if (Object.hasOwn(procfile, type)) {
    problems.push(`${where}: the process type ${type} is declared twice.`);
  } else {
    procfile[type] = command.trim();
  }
}

/**
 * Parses a Procfile: one `<process type>: <command>` per line; blank lines and lines
 * starting with `#` are ignored.
 * @throws ValidationFailed on field `procfile`, with one message per line that is wrong.
 */
export function parseProcfile(text: string): Procfile {
  if (text.length > PROCFILE_MAX_LENGTH) {
    throw ValidationFailed.field('procfile', `The Procfile is larger than ${PROCFILE_MAX_LENGTH} characters.`);
  }
  // No prototype: a process type is only ever a key.
  const procfile = Object.create(null) as Procfile;
  const problems: string[] = [];
  text.replace(/^\uFEFF/, '').split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `Procfile line ${index + 1}`;
    const match = PROCFILE_LINE.exec(line);
    if (match === null) {
      problems.push(`${where}: expected "<process type>: <command>", e.g. "web: node server.js".`);
      return;
    }
    const [, type = '', command = ''] = match;
    addProcessType(procfile, type, command, where, problems);
  });
  if (problems.length === 0 && Object.keys(procfile).length === 0) problems.push('The Procfile declares no process type.');
  if (problems.length > 0) throw new ValidationFailed({ procfile: problems });
  return { ...procfile };
}

/** The image reference of a build made from a pushed commit: `<app>:git-<first 7 characters of the sha>`. */
export function sourceImage(appId: string, sha: string): string {
  return `${appId}:git-${sha.slice(0, 7)}`;
}

/** The files of a pushed commit that decide how it runs; null when the commit has no such file. */
export interface SourceFiles {
  procfile: string | null;
  dockerfile: string | null;
  /** The commit's `.buildpacks` (the buildpacks its build runs, in order); absent or null when it has none. */
  buildpacks?: string | null;
}

/** What a pushed commit builds into. */
export type SourcePlan = Pick<Build, 'image' | 'sha' | 'procfile' | 'dockerfile'>;

/** How a pushed commit is built, as far as its plan depends on it. */
export interface SourcePlanOptions {
  /**
   * Whether a commit without a Dockerfile is compiled with buildpacks: then it may lack a
   * Procfile (the buildpack's default process types may be enough), which the compile decides.
   */
  compiled?: boolean;
}

/**
 * Decides the build of a pushed commit: its image name, Procfile and Dockerfile.
 * @throws RequestRejected `BUILD.NOTHING_TO_RUN` when the commit has neither a Procfile nor a
 *   Dockerfile and is not compiled; ValidationFailed on `procfile`, `dockerfile` or `sha` when one is unusable.
 */
export function planSourceBuild(appId: string, sha: string, files: SourceFiles, options: SourcePlanOptions = {}): SourcePlan {
  if (!COMMIT_SHA_PATTERN.test(sha)) throw ValidationFailed.field('sha', 'A commit is named by 40 lowercase hexadecimal characters.');
  if (files.procfile === null && files.dockerfile === null && options.compiled !== true) {
    throw new RequestRejected(NOTHING_TO_RUN_CODE, NOTHING_TO_RUN);
  }
  if (files.dockerfile !== null && files.dockerfile.length > DOCKERFILE_MAX_LENGTH) {
    throw ValidationFailed.field('dockerfile', `The Dockerfile is larger than ${DOCKERFILE_MAX_LENGTH} characters.`);
  }
  return {
    image: sourceImage(appId, sha),
    sha,
    procfile: files.procfile === null ? {} : parseProcfile(files.procfile),
    dockerfile: files.dockerfile ?? '',
  };
}

/**
 * Adds to `kept` the builds of `releases` (newest first, continuing an earlier call) until it
 * holds `retention` builds: the builds an app keeps are those of its most recently released
 * `retention` distinct builds, so the current one is always kept, and a rollback brings an
 * old build back among them. Returns whether `kept` is full.
 */
export function collectRetainedBuilds(kept: Set<string>, releases: Iterable<{ build: string | null }>, retention: number): boolean {
  for (const release of releases) {
    if (kept.size >= retention) break;
    if (release.build !== null) kept.add(release.build);
  }
  return kept.size >= retention;
}

/** The image a pushed commit is built into when images are built: `<app>:<release version>`, so a rollback runs the exact image. */
export function releaseImage(appId: string, version: number): string {
  return `${appId}:${version}`;
}

/** Whether `image` is a name the platform gives the images it builds for `appId` (`<app>:<number>`): such an image goes once its build is no longer kept. */
export function isReleaseImage(appId: string, image: string): boolean {
  return image.startsWith(`${appId}:`) && /^[1-9][0-9]*$/.test(image.slice(appId.length + 1));
}

/**
 * Whether `image` is a reference by digest (`<repository>@sha256:<64 hex>`), as an image
 * builder with a registry answers: such a reference names one exact image wherever it is pulled.
 */
export function isDigestReference(image: string): boolean {
  return /^[^@\s]+@sha256:[0-9a-f]{64}$/.test(image);
}

/** The code of a push whose source does not build into an image. */
export const BUILD_FAILED = 'BUILD.FAILED';

/** The error of a source that does not build: a bad Dockerfile, a failing step or a build limit, with the reason for the pusher. */
export function buildFailed(reason: string): RequestRejected {
  return new RequestRejected(BUILD_FAILED, `The image build failed: ${reason}`);
}
