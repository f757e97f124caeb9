import { BuildNotRunnable, RequestRejected, RollbackWithoutBuild } from '../errors';
import type { Build } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import type { Scheduler } from '../ports/services';
import { describeVersions, rollbackEmptiesApp, sourceGoesWithRetention } from '../rules/rollbacks';
import type { ReleaseState } from './deploy';
import { schedulerFailure } from './scheduler-failure';
import { retainedBuilds } from './sources';

const RELEASE_PAGE = 100;

/**
 * The versions of an app's releases that a rollback accepts as far as the releases tell
 * (the scheduler is not asked): those with a build whose source is still kept.
 */
export async function rollbackTargets(repos: Repositories, app: string, retention: number): Promise<number[]> {
  const kept = await retainedBuilds(repos, app, retention);
  // Whether each build not kept went with its source, read once per build.
  const gone = new Map<string, boolean>();
  const versions: number[] = [];
  for (let offset = 0; ; offset += RELEASE_PAGE) {
    const page = await repos.releases.listForApp(app, { offset, limit: RELEASE_PAGE });
    for (const release of page.items) {
      if (release.build === null) continue;
      if (!kept.has(release.build)) {
        let went = gone.get(release.build);
        if (went === undefined) {
          const build = await repos.builds.findByUuid(release.build);
          went = build === null || sourceGoesWithRetention(app, build);
          gone.set(release.build, went);
        }
        if (went) continue;
      }
      versions.push(release.version);
    }
    if (offset + RELEASE_PAGE >= page.count) return versions;
  }
}

/** What the checks of a rollback read: the repositories of the deploy, the scheduler, the retention. */
export interface RollbackCheckDeps {
  scheduler: Scheduler;
  buildRetention: number;
}

/**
 * Refuses, before anything starts or stops, a rollback from `current` to `target` that would
 * leave the app not running: a target without a build while the current release has one, a
 * pushed build whose source is no longer kept, or a build the scheduler says it cannot run
 * (asked as `release`, the version the rollback would make).
 * @throws RollbackWithoutBuild (listing the releases that can be rolled back to);
 *   RequestRejected `RELEASE.SOURCE_REMOVED`; BuildNotRunnable with the scheduler's reason;
 *   Unavailable when the scheduler fails to answer.
 */
export async function assertRollbackRuns(
  deps: RollbackCheckDeps,
  repos: Repositories,
  current: ReleaseState,
  target: ReleaseState,
  release: number,
): Promise<void> {
  const { app, version } = target.release;
  if (rollbackEmptiesApp(current.release, target.release)) {
    throw new RollbackWithoutBuild(app, version, describeVersions(await rollbackTargets(repos, app, deps.buildRetention)));
  }
  const build = target.build;
  if (build === null) return;
  if (sourceGoesWithRetention(app, build) && !(await retainedBuilds(repos, app, deps.buildRetention)).has(build.uuid)) {
    throw new RequestRejected(
      'RELEASE.SOURCE_REMOVED',
      `Release v${version} can no longer be rolled back to: only the last ${deps.buildRetention} builds keep their source.`,
    );
  }
  await assertSchedulerRuns(deps.scheduler, build, release, version);
}

/**
 * Asks the scheduler, when it can tell, whether it can run `build` on release `release`.
 * @throws BuildNotRunnable with its reason; Unavailable when it fails to answer (a DomainError
 *   of kind `invalid` it throws is passed on as it is).
 */
async function assertSchedulerRuns(scheduler: Scheduler, build: Build, release: number, version: number): Promise<void> {
  if (scheduler.checkRunnable === undefined) return;
  let reason: string | null;
  try {
    reason = await scheduler.checkRunnable({ app: build.app, release, image: build.image, workdir: build.workdir ?? null, procfile: { ...build.procfile } });
  } catch (error) {
    throw schedulerFailure(`check the build of ${build.app} v${version}`, error);
  }
  if (reason !== null) throw new BuildNotRunnable(version, reason);
}
