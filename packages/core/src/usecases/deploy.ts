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
  private readonly planned: Planned[] = [];
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
   * Starts the planned containers, one process type after another: through the scheduler's
   * whole-type step (`rollType`) when it has one, else one container after another; records
   * the state each reports. Either way the new containers are up before any replaced one
   * stops (`finish`), and a failure leaves the replaced ones serving and none of the new.
   * @throws Unavailable when the scheduler fails, or its DomainError of kind `invalid` (the
   *   containers this rollout started are stopped first).
   */
  async startAll(): Promise<void> {
    const scheduler = this.deps.scheduler;
    if (scheduler.rollType === undefined) {
      for (const entry of this.planned) await this.startOne(entry);
      return;
    }
    for (const group of byType(this.planned)) {
      const type = group[0]?.container.type ?? '';
      const replacing = this.retiring.filter((c) => c.type === type).map((c) => c.uuid);
      const label = `${type}.${group.map((p) => p.container.num).join(',')}`;
      this.started.push(...group.map((p) => p.container.uuid));
      try {
        const states = await scheduler.rollType(group.map((p) => p.spec), replacing);
        for (const { container } of group) {
          const state = states.get(container.uuid);
          if (state === undefined) throw new Error(`it reported no state for ${container.type}.${container.num}`);
          container.state = state;
        }
      } catch (error) {
        await this.abort();
        throw schedulerFailure(`start ${this.app.id} ${label}`, error);
      }
      const now = this.deps.clock.now();
      for (const { container } of group) container.updated = now;
    }
  }

  private async startOne({ container, spec }: Planned): Promise<void> {
    try {
      this.started.push(container.uuid);
      container.state = await this.deps.scheduler.start(spec);
    } catch (error) {
      await this.abort();
      throw schedulerFailure(`start ${this.app.id} ${container.type}.${container.num}`, error);
    }
    container.updated = this.deps.clock.now();
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

/** A planned container with what the scheduler is told of it. */
interface Planned {
  container: Container;
  spec: ContainerSpec;
}

/** The planned containers by process type, types in the order they were first planned. */
function byType(planned: readonly Planned[]): Planned[][] {
  const groups = new Map<string, Planned[]>();
  for (const entry of planned) {
    const group = groups.get(entry.container.type) ?? [];
    group.push(entry);
    groups.set(entry.container.type, group);
  }
  return [...groups.values()];
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
