import { DomainError, Unavailable } from '../errors';
import type { App, Container } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import type { Scheduler } from '../ports/services';
import { containerSpec, currentReleaseWithBuild } from './deploy';

/**
 * What the core answers when the scheduler fails, and what it puts back afterwards. Every use
 * case that calls the scheduler goes through here, so that the 503 `SCHEDULER.FAILED` reads
 * the same whichever step failed:
 *
 * - starting new containers (a deploy, a scale-up, the release phase): `schedulerFailure`,
 *   which answers a failure of kind `invalid` (the request's own fault, e.g. an image no
 *   registry has) as it is, and anything else with a 503;
 * - stopping, restarting, running one-off commands, cleaning up after a dead controller:
 *   `schedulerUnavailable`, always a 503 (the containers ran before; the request cannot have
 *   made them fail);
 * - a stop that fails after others succeeded, in a change that is then given up: the app
 *   stays, so `restartStopped` brings back what the change had stopped.
 */

/** The failure's own words for a message, or `unknown error` when it has none. */
export function failureReason(error: unknown): string {
  return error instanceof Error && error.message ? error.message : 'unknown error';
}

/**
 * The 503 for a scheduler that failed to carry out `action` (`start myapp web.1`): the text
 * says what failed and why; without `error`, only what failed.
 */
export function schedulerUnavailable(action: string, ...error: [unknown] | []): Unavailable {
  const what = `The scheduler failed to ${action}`;
  return new Unavailable('SCHEDULER.FAILED', error.length === 0 ? `${what}.` : `${what}: ${failureReason(error[0])}`);
}

/**
 * The core's answer when the scheduler fails to start something the request asked for: the
 * request's own fault (kind `invalid`, e.g. an image no registry has) as it is, anything else
 * a 503 that says what failed.
 */
export function schedulerFailure(action: string, error: unknown): DomainError {
  if (DomainError.is(error) && error.kind === 'invalid') return error;
  return schedulerUnavailable(action, error);
}

/**
 * Best effort, after a change that stopped some of an app's containers failed and the app
 * stays: starts again those of `stopped` (not one-off runs) that the scheduler no longer
 * runs, each with its own release, so that the app keeps serving. Never throws: the 503 being
 * answered stands either way, and a container that could not be brought back shows in its state.
 */
export async function restartStopped(scheduler: Scheduler, repos: Repositories, app: App, stopped: readonly Container[]): Promise<void> {
  const services = stopped.filter((c) => c.type !== 'run');
  if (services.length === 0) return;
  try {
    const live = await scheduler.states(services.map((c) => c.uuid));
    const state = await currentReleaseWithBuild(repos, app.id);
    for (const container of services) {
      if (live.has(container.uuid)) continue;
      const spec = containerSpec(app, state, container.type, container.num, container.uuid);
      await scheduler.start({ ...spec, release: container.release });
    }
  } catch {
    // The 503 stands either way; a container that could not be brought back shows in its state.
  }
}
