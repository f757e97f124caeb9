import type { Build, Procfile, Structure } from '../model/entities';

/** Summary of a release created by a build: the short sha when there is one, else the image. */
export function describeDeploy(build: Pick<Build, 'image' | 'sha'>): string {
  return `deployed ${build.sha ? build.sha.slice(0, 7) : build.image}`;
}

/** The process type an image build (no Procfile) runs as. */
export const IMAGE_PROCESS_TYPE = 'cmd';

/** Process types a build can run: its Procfile's, and always `cmd` (the image's own command). */
export function runnableTypes(procfile: Procfile): Set<string> {
  return new Set([...Object.keys(procfile), IMAGE_PROCESS_TYPE]);
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
