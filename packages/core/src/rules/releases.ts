import { Unavailable } from '../errors';
import type { Build, Procfile, Structure } from '../model/entities';

/** Summary of a release created by a build: the short sha when there is one, else the image. */
export function describeDeploy(build: Pick<Build, 'image' | 'sha'>): string {
  return `deployed ${build.sha ? build.sha.slice(0, 7) : build.image}`;
}

/** The process type an image build (no Procfile) runs as. */
export const IMAGE_PROCESS_TYPE = 'cmd';

/**
 * Whether the router sends requests to a process type: `web`, and `cmd` (an image's own
 * command, which serves the app when it has no `web`). A routed process is health-gated
 * (up only once it answers) and drained before it stops, whatever scheduler runs it.
 */
export function isRoutedType(type: string): boolean {
  return type === 'web' || type === IMAGE_PROCESS_TYPE;
}

/**
 * The process type that runs once per release, before its processes start (the release
 * phase, e.g. database migrations); it is never scaled.
 */
export const RELEASE_PROCESS_TYPE = 'release';

/** Process types a build can run: its Procfile's but `release`, and always `cmd` (the image's own command). */
export function runnableTypes(procfile: Procfile): Set<string> {
  return new Set([...Object.keys(procfile).filter((type) => type !== RELEASE_PROCESS_TYPE), IMAGE_PROCESS_TYPE]);
}

/** The command of a build's release phase, or null when its Procfile has no `release` type. */
export function releasePhaseCommand(procfile: Procfile): string | null {
  return Object.hasOwn(procfile, RELEASE_PROCESS_TYPE) ? (procfile[RELEASE_PROCESS_TYPE] ?? null) : null;
}

/** Why a scale request may not name `release`: it runs once per release, not as containers. */
export const RELEASE_NOT_SCALABLE = 'The release process type runs once for each new release (the release phase); it cannot be scaled.';

/** The exit code the schedulers report for a one-off command they killed at its timeout (as `timeout(1)` does). */
export const RUN_TIMEOUT_EXIT_CODE = 124;
/** How many of the last lines of a failed release phase's output its error carries. */
export const RELEASE_PHASE_TAIL_LINES = 20;
/** The code of a release refused because its release phase failed. */
export const RELEASE_PHASE_FAILED = 'RELEASE.PHASE_FAILED';

/** The last `count` non-empty lines of a command's output. */
export function lastLines(output: string, count: number): string[] {
  return output.split(/\r?\n/).filter((line) => line.trim() !== '').slice(-count);
}

/** Whether a one-off run was stopped by its timeout: the schedulers report 124 and add a note saying so. */
export function runTimedOut(result: { exitCode: number; output: string }): boolean {
  return result.exitCode === RUN_TIMEOUT_EXIT_CODE && /\[killed after the timeout of [0-9]+ s\]\s*$/.test(result.output);
}

/**
 * The error of a release phase that did not succeed, or null when it exited 0: a 503 whose
 * message says how it ended (its exit code, or the timeout) and its last lines of output.
 */
export function releasePhaseFailure(version: number, result: { exitCode: number; output: string }, timeoutSeconds: number): Unavailable | null {
  if (result.exitCode === 0) return null;
  const how = runTimedOut(result) ? `timed out after ${timeoutSeconds} s` : `exited with code ${result.exitCode}`;
  const tail = lastLines(result.output, RELEASE_PHASE_TAIL_LINES);
  const shown = tail.length === 0 ? ' It printed nothing.' : ` Its last lines:\n${tail.join('\n')}`;
  return new Unavailable(
    RELEASE_PHASE_FAILED,
    `The release phase of v${version} ${how}; the release was not made and the previous one keeps running.${shown}`,
  );
}

/**
 * The structure to deploy a build with: types the build cannot run are dropped, and when
 * nothing is left (an app never scaled, or a Procfile without any of its types) one `web`
 * process starts when the Procfile has one, else one `cmd`.
 */
export function structureForBuild(current: Structure, procfile: Procfile): Structure {
  const runnable = runnableTypes(procfile);
  const kept = Object.fromEntries(Object.entries(current).filter(([type]) => runnable.has(type)));
  // Nothing left to run (never scaled, or every type gone from the Procfile): start the default.
  if (Object.keys(kept).length === 0) {
    return procfile.web !== undefined ? { web: 1 } : { [IMAGE_PROCESS_TYPE]: 1 };
  }
  return kept;
}

/** The command for a process type, or null when the image's own command runs. */
export function commandFor(procfile: Procfile, type: string): string | null {
  return procfile[type] ?? null;
}
