import type { BuildToRun } from '@svc/core';
import { ImageNotFound, type ImagePuller } from './images';

/**
 * Why the Docker and Swarm schedulers cannot run a build made for the process scheduler: it
 * is a git push's checkout on the controller's machine, run as processes there; its image
 * name (`<app>:git-<sha>`) names nothing an engine has or can pull.
 */
export const PROCESS_BUILD_REASON =
  "its build was made for the process scheduler (a git push's checkout on the controller's machine, not an image), " +
  'and this platform now runs apps as containers of images: only a new git push builds an image of that code (pushing a commit the app already has changes nothing)';

/**
 * Whether an engine scheduler can run a build, asked before a rollback starts or stops
 * anything: null when it can (its image is on the engine, or pulled now, as a start would
 * pull it), else the reason: a build made for the process scheduler, or an image that cannot
 * be had (no registry has it, a registry that is refused, another app's build).
 * @throws Error when the engine or the registry fails (the request is not at fault).
 */
export async function engineBuildProblem(images: Pick<ImagePuller, 'inspect'>, build: BuildToRun): Promise<string | null> {
  if (build.workdir !== null && build.workdir !== '') return PROCESS_BUILD_REASON;
  try {
    await images.inspect(build.app, build.image, build.release);
    return null;
  } catch (error) {
    if (error instanceof ImageNotFound) return `image ${build.image} cannot be pulled: ${error.reason}`;
    throw error;
  }
}
