import { stat } from 'node:fs/promises';
import { RELEASE_PROCESS_TYPE, type BuildToRun } from '@svc/core';

/*
 * What this scheduler cannot run: it runs the commands of a Procfile as processes, so an
 * image build (an image's own command, no Procfile) has nothing it can start, and a build of
 * a git push needs its checkout on this machine.
 */

/** Why a build without any Procfile command cannot run here, after "cannot be rolled back to: ". */
export const IMAGE_BUILD_REASON =
  'its build is an image build without a Procfile command, and the process scheduler runs the commands of a Procfile as ' +
  'processes: image builds need the docker or swarm scheduler';

/** Why a git push's build whose checkout is gone cannot run here. */
export const CHECKOUT_GONE_REASON =
  "the files of its build (a git push's checkout) are no longer on the controller's machine: only a new git push builds that code again";

/** The app's log line for a container of an image build, which is reported `crashed` instead of started. */
export function imageBuildNote(label: string, type: string): string {
  return (
    `${label} cannot run: the build has no command for the process type ${type} (an image build). ` +
    'Image builds need a container scheduler; this scheduler runs the commands of a Procfile as processes.'
  );
}

/**
 * The process scheduler's answer to `Scheduler.checkRunnable`, before a rollback starts or
 * stops anything: null when it can run the build, else why (an image build without any
 * Procfile command but `release`; a pushed build whose checkout is no longer here).
 */
export async function processBuildProblem(build: BuildToRun): Promise<string | null> {
  if (!Object.keys(build.procfile).some((type) => type !== RELEASE_PROCESS_TYPE)) return IMAGE_BUILD_REASON;
  if (build.workdir !== null) {
    const info = await stat(build.workdir).catch(() => null);
    if (info === null || !info.isDirectory()) return CHECKOUT_GONE_REASON;
  }
  return null;
}
