import { DomainError, NoBuild, NotFound, Unavailable } from '../errors';
import type { App, Build, Config, Container, Release, Structure } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import type { ContainerSpec, Scheduler } from '../ports/services';
import { commandFor, runnableTypes } from '../rules/releases';
import { releaseEnvironment } from '../rules/config';
import { logEvent, type CoreDependencies } from './context';

/** A release with the build and config it points to. */
export interface ReleaseState {
  release: Release;
  build: Build | null;
  config: Config;
}

/** Loads the current release of an app with its build and config. */
export async function currentRelease(repos: Repositories, appId: string): Promise<ReleaseState> {
  const release = await repos.releases.latest(appId);
  if (!release) throw new NotFound('RELEASE.NOT_FOUND');
  return releaseState(repos, release);
}

/** Loads the build and config a release points to. */
export async function releaseState(repos: Repositories, release: Release): Promise<ReleaseState> {
  const config = await repos.configs.findByUuid(release.config);
  if (!config) throw new Error(`Release v${release.version} of ${release.app} has no config ${release.config}`);
  const build = release.build ? await repos.builds.findByUuid(release.build) : null;
  if (release.build && !build) throw new Error(`Release v${release.version} of ${release.app} has no build ${release.build}`);
  return { release, build, config };
}

/** Like currentRelease, and requires a build. @throws NoBuild */
export async function currentReleaseWithBuild(repos: Repositories, appId: string): Promise<ReleaseState & { build: Build }> {
  const state = await currentRelease(repos, appId);
  if (!state.build) throw new NoBuild();
  return state as ReleaseState & { build: Build };
}

/** The scheduler's view of one container of a release. */
export function containerSpec(app: App, state: ReleaseState & { build: Build }, type: string, num: number, id: string): ContainerSpec {
  const { build, config, release } = state;
  return {
    id,
    app: app.id,
    type,
    num,
    release: release.version,
    image: build.image,
    command: commandFor(build.procfile, type),
    workdir: build.workdir ?? null,
    env: releaseEnvironment(config.values, app.id, release.version),
    memory: config.memory[type] ?? null,
    cpu: config.cpu[type] ?? null,
  };
}

/** A scheduler failure as the answer: the request's own fault (kind `invalid`, e.g. an image no registry has) as it is, anything else 503. */
function schedulerFailure(action: string, error: unknown): DomainError {
  if (DomainError.is(error) && error.kind === 'invalid') return error;
  const reason = error instanceof Error && error.message ? error.message : 'unknown error';
  return new Unavailable('SCHEDULER.FAILED', `The scheduler failed to ${action}: ${reason}`);
}

/** Stops containers, collecting failures instead of stopping at the first. */
async function stopAll(scheduler: Scheduler, ids: string[]): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const id of ids) {
    try {
      await scheduler.stop(id);
    } catch (error) {
      failures.push(error);
    }
  }
  return failures;
}

/**
 * Starting containers inside a transaction, with what to do once it commits or fails.
 * New containers run before the transaction commits; the ones they replace stop only after.
 */
export class Rollout {
  private readonly started: string[] = [];
  private readonly retiring: string[] = [];

  constructor(
    private readonly deps: Pick<CoreDependencies, 'scheduler' | 'ids' | 'clock' | 'logs'>,
    private readonly app: App,
  ) {}

  /**
   * Starts a container and records it.
   * @throws Unavailable when the scheduler fails (the containers this rollout started are stopped).
   */
  async start(repos: Repositories, state: ReleaseState & { build: Build }, type: string, num: number): Promise<Container> {
    const id = this.deps.ids.uuid();
    const spec = containerSpec(this.app, state, type, num, id);
    let containerState;
    try {
      this.started.push(id);
      containerState = await this.deps.scheduler.start(spec);
    } catch (error) {
      await this.abort();
      throw schedulerFailure(`start ${this.app.id} ${type}.${num}`, error);
    }
    const now = this.deps.clock.now();
    const container: Container = {
      uuid: id,
      app: this.app.id,
      owner: this.app.owner,
      release: state.release.version,
      type,
      num,
      state: containerState,
      created: now,
      updated: now,
    };
    await repos.containers.create(container);
    return container;
  }

  /** Removes a container's record now; its process stops once the transaction has committed. */
  async retire(repos: Repositories, container: Container): Promise<void> {
    await repos.containers.delete(container.uuid);
    this.retiring.push(container.uuid);
  }

  /** After commit: stops the replaced containers. Failures are logged, not thrown: the change is done. */
  async finish(): Promise<void> {
    const failures = await stopAll(this.deps.scheduler, this.retiring.splice(0));
    for (const failure of failures) {
      await logEvent(this.deps, this.app.id, `failed to stop a replaced container: ${describe(failure)}`, 'svc[scheduler]');
    }
  }

  /** After a failure: stops what this rollout started, so nothing of it keeps running. */
  async abort(): Promise<void> {
    this.retiring.length = 0;
    await stopAll(this.deps.scheduler, this.started.splice(0));
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs `work` in a transaction in which containers may be started: they are finished
 * (replaced containers stopped) after commit, and aborted (started containers stopped) on
 * any failure, so a failed request leaves neither rows nor processes behind.
 */
export async function withRollout<T>(
  deps: Pick<CoreDependencies, 'uow' | 'scheduler' | 'ids' | 'clock' | 'logs'>,
  work: (repos: Repositories, rolloutFor: (app: App) => Rollout) => Promise<T>,
): Promise<T> {
  const rollouts: Rollout[] = [];
  const rolloutFor = (app: App): Rollout => {
    const rollout = new Rollout(deps, app);
    rollouts.push(rollout);
    return rollout;
  };
  let result: T;
  try {
    result = await deps.uow.transaction(async (repos) => {
      // A retried transaction starts over: undo what an earlier attempt started.
      for (const rollout of rollouts.splice(0)) await rollout.abort();
      return work(repos, rolloutFor);
    });
  } catch (error) {
    for (const rollout of rollouts) await rollout.abort();
    throw error;
  }
  for (const rollout of rollouts) await rollout.finish();
  return result;
}

/**
 * Replaces every running container of the app by containers of `state`'s release, in the
 * given structure (types the build cannot run are skipped).
 */
export async function deployRelease(
  repos: Repositories,
  rollout: Rollout,
  state: ReleaseState & { build: Build },
  structure: Structure,
): Promise<void> {
  const runnable = runnableTypes(state.build.procfile);
  const old = await repos.containers.listForApp(state.release.app);
  for (const [type, count] of Object.entries(structure)) {
    if (!runnable.has(type)) continue;
    for (let num = 1; num <= count; num++) await rollout.start(repos, state, type, num);
  }
  for (const container of old) await rollout.retire(repos, container);
}
