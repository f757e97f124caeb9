import { ContainerModule, type ResolutionContext } from 'inversify';
import { TOKENS, type BuildSlotStore, type UnitOfWork } from '@svc/core';

/** The database as the composition root sees it. */
export interface DatabaseHandle {
  uow: UnitOfWork;
  ping(): Promise<boolean>;
  /** The running builds' slots, shared by every controller process on the database; absent: counted in this process's memory. */
  createBuildSlotStore?(): BuildSlotStore;
  /** The running one-off processes' slots (runs and release phases), likewise; absent: counted in this process's memory. */
  createRunSlotStore?(): BuildSlotStore;
}

/** The store the core counts running builds in (`QUOTA_BUILDS_PER_USER`); null: this process's memory. */
const BUILD_SLOTS = Symbol.for('svc.BuildSlotStore');
/** The store the core counts running one-off processes in (`QUOTA_RUNS_PER_USER`); null: this process's memory. */
const RUN_SLOTS = Symbol.for('svc.RunSlotStore');

/**
 * Binds the database's unit of work, and its build and run slots when it keeps them (SQLite
 * and PostgreSQL): two controller processes on one database then together allow a user
 * `QUOTA_BUILDS_PER_USER` builds and `QUOTA_RUNS_PER_USER` one-off processes at once.
 */
export const persistenceModule = (database: DatabaseHandle) =>
  new ContainerModule(({ bind }) => {
    bind<UnitOfWork>(TOKENS.UnitOfWork).toConstantValue(database.uow);
    bind<BuildSlotStore | null>(BUILD_SLOTS).toConstantValue(database.createBuildSlotStore?.() ?? null);
    bind<BuildSlotStore | null>(RUN_SLOTS).toConstantValue(database.createRunSlotStore?.() ?? null);
  });

/** The build slot store bound by `persistenceModule`, for the core's dependencies. */
export const boundBuildSlots = (ctx: ResolutionContext): BuildSlotStore | null => ctx.get<BuildSlotStore | null>(BUILD_SLOTS);

/** The run slot store bound by `persistenceModule`, for the core's dependencies. */
export const boundRunSlots = (ctx: ResolutionContext): BuildSlotStore | null => ctx.get<BuildSlotStore | null>(RUN_SLOTS);
