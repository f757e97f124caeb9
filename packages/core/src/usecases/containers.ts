import { NoBuild, NotFound, RequestRejected, ValidationFailed } from '../errors';
import type { Container, Structure } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import { assertPageExists, sliceOf } from '../model/pagination';
import type { Repositories } from '../ports/repositories';
import { PROCESS_TYPE_PATTERN } from '../rules/config';
import { mapConcurrently } from '../rules/concurrency';
import { FieldErrorCollector, isPlainObject, toInteger } from '../rules/fields';
import { RELEASE_NOT_SCALABLE, RELEASE_PROCESS_TYPE, runnableTypes } from '../rules/releases';
import { loadVisibleApp, logEvent, type Actor, type CoreDependencies } from './context';
import { journal } from './journal';
import { appEtag, assertIfMatch } from '../rules/etags';
import { carryOut, containerSpec, currentReleaseWithBuild, Rollout } from './deploy';
import { withAppLease, type LeaseDependencies } from './leases';
import { schedulerUnavailable } from './scheduler-failure';
import { assertScaleQuotas, assertScaleQuotasLocked } from './quotas';

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
    else if (type === RELEASE_PROCESS_TYPE) errors.add(type, RELEASE_NOT_SCALABLE);
    else if (count === null || count < 0 || count > max) errors.add(type, `Must be an integer from 0 to ${max}.`);
    else structure[type] = count;
  }
  errors.throwIfAny();
  return structure;
}

/** Sets how many containers of each process type run. */
export class ScaleApp {
  constructor(private readonly deps: LeaseDependencies) {}

  /**
   * Scale-down removes the highest numbers first. New containers start under the app's
   * deploy lease with no transaction open; one short transaction then records them with the
   * structure, and the removed ones stop after it.
   * @throws ValidationFailed / RequestRejected for a bad body or unknown type; NoBuild; NotFound,
   *   AppNotVisible; QuotaExceeded; Unavailable when the scheduler fails (nothing changes then).
   */
  async execute(actor: Actor, appId: string, body: unknown): Promise<void> {
    const requested = parseScale(body, this.deps.settings.scaleMaxPerType);
    const visible = await loadVisibleApp(this.deps.uow.repositories, actor, appId);
    const app = await withAppLease(this.deps, visible.id, async (lease) => {
      const repos = this.deps.uow.repositories;
      const app = await loadVisibleApp(repos, actor, appId);
      assertIfMatch(actor.request?.ifMatch, appEtag(app));
      const state = await currentReleaseWithBuild(repos, app.id);
      const runnable = runnableTypes(state.build.procfile);
      const unknown = Object.keys(requested).filter((type) => !runnable.has(type));
      if (unknown.length > 0) {
        throw new ValidationFailed(Object.fromEntries(unknown.map((t) => [t, [`Container type ${t} does not exist in application`]])));
      }
      await assertScaleQuotas(repos, app, { ...app.structure, ...requested }, this.deps.settings.quotas);
      const rollout = new Rollout(this.deps, app);
      for (const [type, count] of Object.entries(requested)) {
        const existing = await repos.containers.listForApp(app.id, { type });
        const byNumber = [...existing].sort((a, b) => a.num - b.num);
        for (const container of byNumber.slice(count).reverse()) rollout.retire(container);
        const used = new Set(byNumber.slice(0, count).map((c) => c.num));
        let num = 1;
        for (let have = Math.min(count, byNumber.length); have < count; have++) {
          while (used.has(num)) num++;
          used.add(num);
          rollout.plan(state, type, num);
        }
      }
      return carryOut(this.deps, lease, rollout, null, async (tx) => {
        const locked = await loadVisibleApp(tx, actor, appId, true);
        assertIfMatch(actor.request?.ifMatch, appEtag(locked));
        const updated = { ...locked, structure: { ...locked.structure, ...requested }, updated: this.deps.clock.now() };
        // Counted again under the owner's lock: other apps of the owner may have grown meanwhile.
        await assertScaleQuotasLocked(tx, locked, updated.structure, this.deps.settings.quotas);
        await tx.apps.update(updated);
        const scaled = Object.entries(requested).map(([type, count]) => `${type}=${count}`).join(' ');
        await journal(tx, this.deps, actor, { action: 'scale.update', app: locked, target: Object.keys(requested).join(','), summary: `${actor.user.username} scaled containers ${scaled}` });
        return updated;
      });
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
  constructor(private readonly deps: LeaseDependencies) {}

  /**
   * Restarts under the app's deploy lease with no transaction open, then records the states
   * the scheduler reports in one short transaction.
   * @throws NotFound (app, or no container matches a given type/num), AppNotVisible, Unavailable.
   */
  async execute(actor: Actor, appId: string, target: RestartTarget): Promise<Container[]> {
    const visible = await loadVisibleApp(this.deps.uow.repositories, actor, appId);
    const restarted = await withAppLease(this.deps, visible.id, async (lease) => {
      const repos = this.deps.uow.repositories;
      const app = await loadVisibleApp(repos, actor, appId);
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
          throw schedulerUnavailable(`restart ${app.id} ${container.type}.${container.num}`, error);
        }
        result.push({ ...container, state: containerState, updated: this.deps.clock.now() });
      }
      await this.deps.uow.transaction(async (tx) => {
        await lease.publish(tx);
        // A container removed meanwhile (its app deleted) is not brought back by a state update.
        for (const container of result) await tx.containers.updateState(container.uuid, container.state, container.updated);
        const what = target.type === undefined ? 'all containers' : target.num === undefined ? `${target.type} containers` : `${target.type}.${target.num}`;
        await journal(tx, this.deps, actor, { action: 'container.restart', app, target: what, summary: `${actor.user.username} restarted ${what}` });
      });
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
/** How many of an app's containers RestoreContainers starts at once at most (as many as the scheduler's `concurrentStarts`). */
export const RESTORE_CONCURRENCY = 16;

/** The source of the lines RestoreContainers writes to an app's log. */
const RESTORE_LOG_SOURCE = 'svc[scheduler]';

/**
 * Brings every app back to its recorded containers, e.g. when the controller starts with a
 * scheduler that has forgotten them.
 */
export class RestoreContainers {
  constructor(private readonly deps: LeaseDependencies) {}

  /**
   * For every app: deletes the leftover records of one-off `run` containers and starts each
   * other recorded container on the app's current release, with its recorded id, type and
   * number (several of an app's at once when the scheduler takes concurrent starts), recording the state the
   * scheduler reports. A container that fails to start is
   * recorded `error` and the reason is written to the app's log; nothing is thrown for it.
   * Each app is restored under its deploy lease, with no transaction open while the
   * scheduler starts containers.
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
    const failures: string[] = [];
    try {
      // Most apps run nothing: they need no lease (two writes each) at start-up.
      if ((await this.deps.uow.repositories.containers.listForApp(appId, { includeRun: true })).length === 0) return 0;
      await withAppLease(this.deps, appId, async (lease) => {
        const repos = this.deps.uow.repositories;
        const app = await repos.apps.findById(appId);
        if (!app) return;
        const containers = await repos.containers.listForApp(app.id, { includeRun: true });
        const runs = containers.filter((c) => c.type === 'run');
        const recorded = containers.filter((c) => c.type !== 'run');
        const states: Array<{ uuid: string; state: Container['state']; updated: Date }> = [];
        let state;
        try {
          state = recorded.length === 0 ? null : await currentReleaseWithBuild(repos, app.id);
        } catch (error) {
          if (!(error instanceof NoBuild)) throw error;
          failures.push('failed to restore containers: the current release has no build');
          for (const container of recorded) states.push({ uuid: container.uuid, state: 'error', updated: this.deps.clock.now() });
          state = null;
        }
        if (state !== null) {
          const release = state;
          // On an engine each start mostly waits (adopting a container that still runs): a few at a
          // time, as the scheduler allows, so that a restart with hundreds of containers does not add the waits up.
          const lanes = Math.min(RESTORE_CONCURRENCY, Math.max(1, this.deps.scheduler.concurrentStarts ?? 1));
          const outcomes = await mapConcurrently(recorded, lanes, async (container) => {
            const spec = containerSpec(app, release, container.type, container.num, container.uuid);
            try {
              return { state: await this.deps.scheduler.start(spec), failure: null };
            } catch (error) {
              return { state: 'error' as const, failure: `failed to restore ${container.type}.${container.num}: ${reasonOf(error)}` };
            }
          });
          outcomes.forEach((outcome, i) => {
            if (outcome.failure === null) restored++;
            else failures.push(outcome.failure);
            states.push({ uuid: (recorded[i] as Container).uuid, state: outcome.state, updated: this.deps.clock.now() });
          });
        }
        await this.deps.uow.transaction(async (tx) => {
          await lease.publish(tx);
          // A one-off command does not outlive the controller that waited for it.
          for (const run of runs) await tx.containers.delete(run.uuid);
          for (const { uuid, state: s, updated } of states) await tx.containers.updateState(uuid, s, updated);
        });
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
