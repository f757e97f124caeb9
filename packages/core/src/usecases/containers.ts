import { NoBuild, NotFound, RequestRejected, Unavailable, ValidationFailed } from '../errors';
import type { Container, Structure } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import { assertPageExists, sliceOf } from '../model/pagination';
import type { Repositories } from '../ports/repositories';
import { PROCESS_TYPE_PATTERN } from '../rules/config';
import { FieldErrorCollector, isPlainObject, toInteger } from '../rules/fields';
import { runnableTypes } from '../rules/releases';
import { loadVisibleApp, logEvent, type Actor, type CoreDependencies } from './context';
import { assertScaleQuotas } from './quotas';
import { containerSpec, currentReleaseWithBuild, withRollout } from './deploy';

/** Replaces recorded states with the scheduler's live ones where it knows them. */
async function withLiveStates(scheduler: CoreDependencies['scheduler'], containers: Container[]): Promise<Container[]> {
  if (containers.length === 0) return containers;
  let states: Map<string, Container['state']>;
  try {
    states = await scheduler.states(containers.map((c) => c.uuid));
  } catch {
    // Listing must work while the scheduler is unwell: the recorded state is the best answer then.
    return containers;
  }
  return containers.map((c) => ({ ...c, state: states.get(c.uuid) ?? c.state }));
}

/** Lists an app's containers, oldest first; one-off `run` containers only when asked for by type. */
export class ListContainers {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'scheduler'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, type: string | undefined, page: PageRequest): Promise<Page<Container>> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const result = await repos.containers.pageForApp(app.id, type === undefined ? {} : { type }, sliceOf(page));
    assertPageExists(page, result.count);
    return { count: result.count, items: await withLiveStates(this.deps.scheduler, result.items) };
  }
}

function parseScale(body: unknown, max: number): Structure {
  if (!isPlainObject(body) || Object.keys(body).length === 0) {
    throw new RequestRejected('SCALE.EMPTY', 'Give at least one process type and count, e.g. {"web": 2}.');
  }
  const errors = new FieldErrorCollector();
  const structure: Structure = {};
  for (const [type, raw] of Object.entries(body)) {
    const count = toInteger(raw);
    if (!PROCESS_TYPE_PATTERN.test(type)) errors.add(type, 'Process types can only contain [a-z0-9-_].');
    else if (count === null || count < 0 || count > max) errors.add(type, `Must be an integer from 0 to ${max}.`);
    else structure[type] = count;
  }
  errors.throwIfAny();
  return structure;
}

/** Sets how many containers of each process type run. */
export class ScaleApp {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'scheduler' | 'ids' | 'clock' | 'logs' | 'settings'>) {}

  /**
   * Scale-down removes the highest numbers first.
   * @throws ValidationFailed / RequestRejected for a bad body or unknown type; NoBuild; NotFound,
   *   AppNotVisible; QuotaExceeded; Unavailable when the scheduler fails (nothing changes then).
   */
  async execute(actor: Actor, appId: string, body: unknown): Promise<void> {
    const requested = parseScale(body, this.deps.settings.scaleMaxPerType);
    const app = await withRollout(this.deps, async (repos, rolloutFor) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const state = await currentReleaseWithBuild(repos, app.id);
      const runnable = runnableTypes(state.build.procfile);
      const unknown = Object.keys(requested).filter((type) => !runnable.has(type));
      if (unknown.length > 0) {
        throw new ValidationFailed(Object.fromEntries(unknown.map((t) => [t, [`Container type ${t} does not exist in application`]])));
      }
      await assertScaleQuotas(repos, app, { ...app.structure, ...requested }, this.deps.settings.quotas);
      const rollout = rolloutFor(app);
      for (const [type, count] of Object.entries(requested)) {
        const existing = await repos.containers.listForApp(app.id, { type });
        const byNumber = [...existing].sort((a, b) => a.num - b.num);
        for (const container of byNumber.slice(count).reverse()) await rollout.retire(repos, container);
        const used = new Set(byNumber.slice(0, count).map((c) => c.num));
        let num = 1;
        for (let have = Math.min(count, byNumber.length); have < count; have++) {
          while (used.has(num)) num++;
          used.add(num);
          await rollout.start(repos, state, type, num);
        }
      }
      const updated = { ...app, structure: { ...app.structure, ...requested }, updated: this.deps.clock.now() };
      await repos.apps.update(updated);
      return updated;
    });
    const summary = Object.entries(requested).map(([type, count]) => `${type}=${count}`).join(' ');
    await logEvent(this.deps, app.id, `${actor.user.username} scaled containers ${summary}`);
  }
}

/** Which containers a restart covers: all, one process type, or one container. */
export interface RestartTarget {
  type?: string;
  num?: number;
}

/** Restarts an app's containers in place. */
export class RestartContainers {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'scheduler' | 'clock' | 'logs'>) {}

  /** @throws NotFound (app, or no container matches a given type/num), AppNotVisible, Unavailable. */
  async execute(actor: Actor, appId: string, target: RestartTarget): Promise<Container[]> {
    const restarted = await this.deps.uow.transaction(async (repos) => {
      const app = await loadVisibleApp(repos, actor, appId, true);
      const containers = await this.select(repos, app.id, target);
      if (containers.length === 0) return [];
      const state = await currentReleaseWithBuild(repos, app.id);
      const result: Container[] = [];
      for (const container of containers) {
        const spec = containerSpec(app, state, container.type, container.num, container.uuid);
        let containerState: Container['state'];
        try {
          await this.deps.scheduler.stop(container.uuid);
          containerState = await this.deps.scheduler.start({ ...spec, release: container.release });
        } catch (error) {
          const reason = error instanceof Error ? error.message : 'unknown error';
          throw new Unavailable('SCHEDULER.FAILED', `The scheduler failed to restart ${app.id} ${container.type}.${container.num}: ${reason}`);
        }
        const updated = this.deps.clock.now();
        await repos.containers.updateState(container.uuid, containerState, updated);
        result.push({ ...container, state: containerState, updated });
      }
      return result;
    });
    if (restarted.length > 0) {
      const what = target.type === undefined ? 'all containers' : target.num === undefined ? `${target.type} containers` : `${target.type}.${target.num}`;
      await logEvent(this.deps, appId, `${actor.user.username} restarted ${what}`);
    }
    return restarted;
  }

  private async select(repos: Repositories, appId: string, target: RestartTarget): Promise<Container[]> {
    if (target.type === undefined) return repos.containers.listForApp(appId);
    const ofType = await repos.containers.listForApp(appId, { type: target.type });
    const chosen = target.num === undefined ? ofType : ofType.filter((c) => c.num === target.num);
    if (target.num !== undefined && chosen.length === 0) {
      throw new NotFound('CONTAINER.NOT_FOUND', `Container ${target.type}.${target.num} not found.`);
    }
    return chosen;
  }
}

/** How many apps RestoreContainers reads at a time. */
export const RESTORE_PAGE_SIZE = 100;

/** The source of the lines RestoreContainers writes to an app's log. */
const RESTORE_LOG_SOURCE = 'svc[scheduler]';

/**
 * Brings every app back to its recorded containers, e.g. when the controller starts with a
 * scheduler that has forgotten them.
 */
export class RestoreContainers {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'scheduler' | 'clock' | 'logs'>) {}

  /**
   * For every app: deletes the leftover records of one-off `run` containers and starts each
   * other recorded container on the app's current release, with its recorded id, type and
   * number, recording the state the scheduler reports. A container that fails to start is
   * recorded `error` and the reason is written to the app's log; nothing is thrown for it.
   */
  async execute(): Promise<{ restored: number }> {
    let restored = 0;
    for (let offset = 0; ; offset += RESTORE_PAGE_SIZE) {
      const page = await this.deps.uow.repositories.apps.listVisibleTo(null, { offset, limit: RESTORE_PAGE_SIZE });
      for (const app of page.items) restored += await this.restoreApp(app.id);
      if (page.items.length < RESTORE_PAGE_SIZE || offset + RESTORE_PAGE_SIZE >= page.count) break;
    }
    return { restored };
  }

  private async restoreApp(appId: string): Promise<number> {
    let restored = 0;
    let failures: string[] = [];
    try {
      await this.deps.uow.transaction(async (repos) => {
        // A retried transaction starts over; the scheduler restarts ids it already runs.
        restored = 0;
        failures = [];
        const app = await repos.apps.lockById(appId);
        if (!app) return;
        const containers = await repos.containers.listForApp(app.id, { includeRun: true });
        // A one-off command does not outlive the controller that waited for it.
        for (const run of containers.filter((c) => c.type === 'run')) await repos.containers.delete(run.uuid);
        const recorded = containers.filter((c) => c.type !== 'run');
        if (recorded.length === 0) return;
        let state;
        try {
          state = await currentReleaseWithBuild(repos, app.id);
        } catch (error) {
          if (!(error instanceof NoBuild)) throw error;
          failures.push('failed to restore containers: the current release has no build');
          for (const container of recorded) await repos.containers.updateState(container.uuid, 'error', this.deps.clock.now());
          return;
        }
        for (const container of recorded) {
          const spec = containerSpec(app, state, container.type, container.num, container.uuid);
          let containerState: Container['state'];
          try {
            containerState = await this.deps.scheduler.start(spec);
            restored++;
          } catch (error) {
            containerState = 'error';
            failures.push(`failed to restore ${container.type}.${container.num}: ${reasonOf(error)}`);
          }
          await repos.containers.updateState(container.uuid, containerState, this.deps.clock.now());
        }
      });
    } catch (error) {
      failures.push(`failed to restore containers: ${reasonOf(error)}`);
    }
    for (const failure of failures) await logEvent(this.deps, appId, failure, RESTORE_LOG_SOURCE);
    return restored;
  }
}

function reasonOf(error: unknown): string {
  return error instanceof Error && error.message ? error.message : 'unknown error';
}
