import { NoBuild, NotFound } from '../errors';
import type { App, Build, Config, Container, Release, Structure } from '../model/entities';
import type { Repositories } from '../ports/repositories';
import type { ContainerSpec } from '../ports/services';
import { commandFor, runnableTypes } from '../rules/releases';
import { releaseEnvironment } from '../rules/config';
import { logEvent, type CoreDependencies } from './context';
import { stopAll, type HeldLease } from './leases';
import { schedulerFailure } from './scheduler-failure';

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

/**
 * A change to an app's containers, planned in memory, carried out with no transaction open:
 * `plan` and `retire` say what the change is, `startAll` starts the new containers through
 * the scheduler, `write` records the change inside the (short) transaction that publishes
 * it, and `finish` stops the replaced containers once it has committed; `abort` stops what
 * was started when anything fails, so a failed change leaves neither rows nor processes.
 */
export class Rollout {
  private readonly planned: Array<{ container: Container; spec: ContainerSpec }> = [];
  private readonly retiring: Container[] = [];
  private readonly started: string[] = [];

  constructor(
    private readonly deps: Pick<CoreDependencies, 'scheduler' | 'ids' | 'clock' | 'logs'>,
    private readonly app: App,
  ) {}

  /** Plans a new container of `state`'s release. */
  plan(state: ReleaseState & { build: Build }, type: string, num: number): Container {
    const id = this.deps.ids.uuid();
    const now = this.deps.clock.now();
    const container: Container = {
      uuid: id,
      app: this.app.id,
      owner: this.app.owner,
      release: state.release.version,
      type,
      num,
      state: 'initialized',
      created: now,
      updated: now,
    };
    this.planned.push({ container, spec: containerSpec(this.app, state, type, num, id) });
    return container;
  }

  /** Plans the removal of a container: its record goes with the publishing transaction, its process after it. */
  retire(container: Container): void {
    this.retiring.push(container);
  }

  /** Ids of the containers this rollout starts. */
  get starting(): string[] {
    return this.planned.map((p) => p.container.uuid);
  }

  /**
   * Starts the planned containers, one after another, recording the state each reports.
   * @throws Unavailable when the scheduler fails (the containers this rollout started are stopped).
   */
  async startAll(): Promise<void> {
    for (const { container, spec } of this.planned) {
      try {
        this.started.push(container.uuid);
        container.state = await this.deps.scheduler.start(spec);
      } catch (error) {
        await this.abort();
        throw schedulerFailure(`start ${this.app.id} ${container.type}.${container.num}`, error);
      }
      container.updated = this.deps.clock.now();
    }
  }

  /** Inside the publishing transaction: records the new containers and removes the records of the retired ones. */
  async write(repos: Repositories): Promise<void> {
    for (const { container } of this.planned) await repos.containers.create(container);
    for (const container of this.retiring) await repos.containers.delete(container.uuid);
  }

  /** After commit: stops the replaced containers. Failures are logged, not thrown: the change is done. */
  async finish(): Promise<void> {
    const failures = await stopAll(this.deps.scheduler, this.retiring.splice(0).map((c) => c.uuid));
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
 * Carries out a planned rollout under the app's lease: records what it is about to start in
 * the lease, starts it with no transaction open, then publishes in one short transaction
 * (`publish`, which also ends the lease), and stops what it replaced. On any failure the
 * started containers are stopped and nothing is written.
 * @throws whatever `publish` throws; Unavailable when the scheduler fails or the lease was lost.
 */
export async function carryOut<T>(
  deps: Pick<CoreDependencies, 'uow'>,
  lease: HeldLease,
  rollout: Rollout,
  version: number | null,
  publish: (repos: Repositories) => Promise<T>,
): Promise<T> {
  // Only containers need a trace before the scheduler sees them: a change that starts none
  // leaves nothing to clean up if this process dies.
  if (rollout.starting.length > 0) await lease.record(version, rollout.starting);
  await rollout.startAll();
  let result: T;
  try {
    result = await deps.uow.transaction(async (repos) => {
      await lease.publish(repos);
      const published = await publish(repos);
      await rollout.write(repos);
      return published;
    });
  } catch (error) {
    await rollout.abort();
    throw error;
  }
  await rollout.finish();
  return result;
}

/**
 * Plans the replacement of every running container of the app by containers of `state`'s
 * release, in the given structure (types the build cannot run are skipped).
 */
export async function planRelease(
  repos: Repositories,
  rollout: Rollout,
  state: ReleaseState & { build: Build },
  structure: Structure,
): Promise<void> {
  const runnable = runnableTypes(state.build.procfile);
  const old = await repos.containers.listForApp(state.release.app);
  for (const [type, count] of Object.entries(structure)) {
    if (!runnable.has(type)) continue;
    for (let num = 1; num <= count; num++) rollout.plan(state, type, num);
  }
  for (const container of old) rollout.retire(container);
}
