import { TooMany } from '../errors';
import type { BuildSlotStore } from '../ports/build-slots';
import type { UnitOfWork } from '../ports/repositories';
import type { Clock, IdGenerator, Timer } from '../ports/services';
import { BuildSlots, InMemoryBuildSlotStore } from './build-slots';

/**
 * One-off processes (`run`s and release phases) the apps of one owner may run at once when
 * the settings name no other number (`QUOTA_RUNS_PER_USER`).
 */
export const DEFAULT_RUNS_PER_USER = 5;

/** The refusal of a one-off process past its owner's quota. */
export function tooManyRuns(held: number): TooMany {
  return new TooMany(
    'RUN.TOO_MANY',
    `The apps of this owner already run ${held} one-off processes (runs and release phases), the most allowed at once; try again when one has finished.`,
  );
}

/** The store each unit of work's runs are counted in when no shared store is given: one per unit of work, so runs and release phases count together. */
const LOCAL_STORES = new WeakMap<UnitOfWork, InMemoryBuildSlotStore>();

/** What counting one-off processes needs. */
export interface RunSlotDependencies {
  uow: UnitOfWork;
  clock: Clock;
  timer: Timer;
  ids: Pick<IdGenerator, 'uuid'>;
  /** The slots of every controller process on the database; absent or null: this process's memory. */
  runSlots?: BuildSlotStore | null;
}

/**
 * The one-off processes each owner's apps run now: `run`s and release phases, each charged
 * to the app's owner (as its scaled processes are) and counted, like builds, in slots that
 * live while the process runs, are renewed meanwhile and expire when their controller dies
 * (ADR 0037).
 */
export function runSlotsOf(deps: RunSlotDependencies): BuildSlots {
  let store = deps.runSlots ?? LOCAL_STORES.get(deps.uow);
  if (store === undefined) {
    const local = new InMemoryBuildSlotStore();
    LOCAL_STORES.set(deps.uow, local);
    store = local;
  }
  return new BuildSlots(store, deps.clock, deps.timer, deps.ids, { refusal: tooManyRuns });
}
