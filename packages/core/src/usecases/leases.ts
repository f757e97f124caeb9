import { Unavailable } from '../errors';
import type { DeployLease } from '../model/entities';
import type { Repositories, UnitOfWork } from '../ports/repositories';
import type { RandomSource, Scheduler } from '../ports/services';
import { KeyedQueue } from '../model/keyed-queue';
import { logEvent, type CoreDependencies } from './context';
import { schedulerUnavailable } from './scheduler-failure';

/** The ports that serialising an app's deploys needs. */
export type LeaseDependencies = Pick<CoreDependencies, 'uow' | 'scheduler' | 'ids' | 'clock' | 'timer' | 'random' | 'logs' | 'settings'>;

/** The source of the lines written to an app's log about deploys cleaned up after their holder died. */
const CLEANUP_LOG_SOURCE = 'svc[scheduler]';

/** Waiting for another controller process's lease: first pause, and the longest. */
const FIRST_POLL_MS = 10;
const LONGEST_POLL_MS = 200;

/** A pause of about `delay` ms, from half to one and a half times it: processes waiting together do not poll together. */
export function jittered(delay: number, random: RandomSource): number {
  const whole = Math.max(1, Math.round(delay));
  return Math.floor(whole / 2) + random.int(whole);
}

// One queue per database: every set of use cases built on the same unit of work shares it,
// whichever object holds them (the server builds use cases per request).
const queues = new WeakMap<UnitOfWork, KeyedQueue>();

function queueOf(uow: UnitOfWork): KeyedQueue {
  let queue = queues.get(uow);
  if (queue === undefined) {
    queue = new KeyedQueue();
    queues.set(uow, queue);
  }
  return queue;
}

function lost(app: string): Unavailable {
  return new Unavailable('DEPLOY.LEASE_LOST', `The deploy of ${app} took too long to report progress and was cancelled; try again.`);
}

/** Stops containers, collecting failures instead of stopping at the first. */
export async function stopAll(scheduler: Scheduler, ids: readonly string[]): Promise<unknown[]> {
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

function describe(error: unknown): string {
  return error instanceof Error && error.message ? error.message : String(error);
}

/** The app's deploy lease while this process holds it. */
export class HeldLease {
  private published = false;
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: LeaseDependencies,
    private lease: DeployLease,
  ) {}

  get app(): string {
    return this.lease.app;
  }

  get holder(): string {
    return this.lease.holder;
  }

  /**
   * Writes down the release being rolled out and the containers about to be started, before
   * starting them: if this process dies, whoever cleans up knows what to stop.
   * @throws Unavailable when the lease was taken over.
   */
  async record(version: number | null, containers: readonly string[]): Promise<void> {
    const written = await this.rewrite((lease) => ({ ...lease, version, containers: [...containers] }));
    if (!written) throw lost(this.app);
  }

  /** Pushes the expiry forward; false when the lease was taken over. A database failure is left for the next renewal. */
  async renew(): Promise<boolean> {
    try {
      return await this.rewrite((lease) => lease);
    } catch {
      // The lease expires if this goes on; publishing then finds it lost and undoes the deploy.
      return true;
    }
  }

  /**
   * Writes the lease changed by `change`, with renewed times, after every earlier write of
   * this holder: a renewal must not overwrite the containers a later record has listed.
   */
  private rewrite(change: (lease: DeployLease) => DeployLease): Promise<boolean> {
    const write = this.writes.then(async () => {
      const next: DeployLease = { ...change(this.lease), ...this.renewedTimes() };
      if (!(await this.deps.uow.repositories.deploys.replace(this.lease.holder, next))) return false;
      this.lease = next;
      return true;
    });
    this.writes = write.catch(() => undefined);
    return write;
  }

  /**
   * Ends the lease inside the transaction that publishes the deploy, so that the deploy
   * commits only if nobody took the app over meanwhile.
   * @throws Unavailable when the lease was taken over (the transaction must roll back).
   */
  async publish(repos: Repositories): Promise<void> {
    if (!(await repos.deploys.remove(this.app, this.holder))) throw lost(this.app);
    this.published = true;
  }

  /** Whether `publish` ran (its transaction may still have rolled back). */
  get publishing(): boolean {
    return this.published;
  }

  /** Removes the lease outside any transaction; failures are left to expiry. */
  async release(): Promise<void> {
    try {
      await this.deps.uow.repositories.deploys.remove(this.app, this.holder);
    } catch {
      // An unreachable database: the lease expires, and whoever takes it over stops what it lists.
    }
  }

  private renewedTimes(): Pick<DeployLease, 'heartbeat' | 'expires'> {
    const now = this.deps.clock.now();
    return { heartbeat: now, expires: expiryFrom(this.deps, now) };
  }
}

function expiryFrom(deps: Pick<CoreDependencies, 'settings'>, now: Date): Date {
  return new Date(now.getTime() + deps.settings.deployLeaseSeconds * 1000);
}

/** Whether a lease's holder has stopped renewing it. */
export function isExpired(lease: DeployLease, now: Date): boolean {
  return lease.expires.getTime() <= now.getTime();
}

/**
 * Takes a lease whose holder died over on behalf of `mine`'s holder: stops the containers
 * it lists, then leaves the lease to `mine` (or removes it when `mine` is null).
 * @returns false when another process took it over first.
 * @throws Unavailable when a container cannot be stopped (the lease is left expired, listing them, for the next attempt).
 */
export async function takeOver(deps: LeaseDependencies, stale: DeployLease, mine: DeployLease | null): Promise<boolean> {
  const repos = deps.uow.repositories;
  const holder = mine?.holder ?? deps.ids.uuid();
  const claimed: DeployLease = { ...(mine ?? stale), holder, containers: stale.containers };
  if (!(await repos.deploys.replace(stale.holder, claimed))) return false;
  const failures = await stopAll(deps.scheduler, stale.containers);
  if (failures.length > 0) {
    await repos.deploys.replace(holder, { ...claimed, expires: deps.clock.now() }).catch(() => false);
    const reason = `failed to stop the containers of an interrupted deploy: ${failures.map(describe).join('; ')}`;
    await logEvent(deps, stale.app, reason, CLEANUP_LOG_SOURCE);
    throw schedulerUnavailable(`clean up an interrupted deploy of ${stale.app}`);
  }
  const kept = mine === null ? await repos.deploys.remove(stale.app, holder) : await repos.deploys.replace(holder, mine);
  const what = stale.version === null ? 'change' : `deploy of v${stale.version}`;
  await logEvent(deps, stale.app, `cleaned up an interrupted ${what}: stopped ${stale.containers.length} container(s)`, CLEANUP_LOG_SOURCE);
  return kept;
}

async function acquire(deps: LeaseDependencies, app: string): Promise<HeldLease> {
  const repos = deps.uow.repositories;
  const holder = deps.ids.uuid();
  let delay = FIRST_POLL_MS;
  for (;;) {
    const now = deps.clock.now();
    const lease: DeployLease = { app, holder, version: null, containers: [], started: now, heartbeat: now, expires: expiryFrom(deps, now) };
    if (await repos.deploys.insert(lease)) return new HeldLease(deps, lease);
    const current = await repos.deploys.find(app);
    if (current === null) continue;
    if (isExpired(current, now)) {
      if (await takeOver(deps, current, lease)) return new HeldLease(deps, lease);
      continue;
    }
    // Another controller process is deploying this app: wait for it, with jitter.
    await deps.timer.sleep(jittered(delay, deps.random));
    delay = Math.min(delay * 2, LONGEST_POLL_MS);
  }
}

/** What a change made in one transaction hands back: its result, and what to do once it has committed. */
export interface CommittedChange<T> {
  result: T;
  /** Runs after the commit, still before the app's next change (e.g. stopping replaced containers). */
  afterCommit(): Promise<void>;
}

/**
 * A change that may be made whole in one transaction: it returns null, having written
 * nothing it wants kept, when it turns out to need the scheduler (containers to start, a
 * release phase to run); it is then made again under a lease held outside any transaction.
 */
export type OneTransactionChange<T> = (tx: Repositories) => Promise<CommittedChange<T> | null>;

/** Thrown inside the transaction to roll back a change that needs the scheduler. */
class NeedsScheduler extends Error {}

/**
 * Makes `change` in one transaction that holds the app's deploy lease from its first
 * statement to its commit: the lease row is inserted first and removed last, in that same
 * transaction. Nothing of it outlives the transaction, and while it is open another
 * controller process that tries to take the lease waits for it to end (its insert meets
 * the uncommitted row; with SQLite there is one writer anyway), then finds the app free and
 * reads what was committed. The lease rules hold as they do for a lease row of its own:
 * one change of an app at a time, in the order they get the lease.
 * @returns null when the app's lease is held by another process (nothing was written: the
 *   caller takes the lease the usual way, waiting or taking over), or when `change` needs
 *   the scheduler (rolled back).
 */
async function inOneTransaction<T>(deps: LeaseDependencies, app: string, change: OneTransactionChange<T>): Promise<CommittedChange<T> | null> {
  const holder = deps.ids.uuid();
  try {
    return await deps.uow.transaction(async (tx) => {
      const now = deps.clock.now();
      const lease: DeployLease = { app, holder, version: null, containers: [], started: now, heartbeat: now, expires: expiryFrom(deps, now) };
      if (!(await tx.deploys.insert(lease))) return null;
      const committed = await change(tx);
      if (committed === null) throw new NeedsScheduler();
      if (!(await tx.deploys.remove(app, holder))) throw lost(app);
      return committed;
    });
  } catch (error) {
    if (error instanceof NeedsScheduler) return null;
    throw error;
  }
}

/**
 * Runs `work` while holding the app's deploy lease: deploys of one app run one at a time,
 * in arrival order within this process (a queue per app) and across processes (a lease row
 * per app, renewed while `work` runs, taken over once its holder stops renewing it). No
 * transaction is open while `work` waits for the scheduler; `work` ends the lease inside
 * the transaction that publishes its result (`HeldLease.publish`), or it is removed after.
 *
 * With `oneTransaction`, a change that turns out to need no scheduler is first tried whole
 * in one transaction that holds the lease itself (see `inOneTransaction`): one commit
 * instead of two. `work` runs only when that change declines or another process holds the
 * lease; either way the change is made exactly once.
 */
export function withAppLease<T>(
  deps: LeaseDependencies,
  app: string,
  work: (lease: HeldLease) => Promise<T>,
  oneTransaction?: OneTransactionChange<T>,
): Promise<T> {
  return queueOf(deps.uow).run(app, async () => {
    if (oneTransaction !== undefined) {
      const committed = await inOneTransaction(deps, app, oneTransaction);
      if (committed !== null) {
        await committed.afterCommit();
        return committed.result;
      }
    }
    const lease = await acquire(deps, app);
    const stopHeartbeat = deps.timer.every((deps.settings.deployLeaseSeconds * 1000) / 3, () => void lease.renew());
    let succeeded = false;
    try {
      const result = await work(lease);
      succeeded = true;
      return result;
    } finally {
      stopHeartbeat();
      // After a committed publish the row is gone already.
      if (!(succeeded && lease.publishing)) await lease.release();
    }
  });
}

/**
 * Cleans up deploys whose controller process died mid-rollout: for each lease (every one
 * when `all`, which is right only when no other controller process shares the database;
 * otherwise the expired ones), stops the containers it lists and removes it. Nothing else
 * of an unpublished deploy was ever written.
 */
export class RecoverDeploys {
  constructor(private readonly deps: LeaseDependencies) {}

  /** A container that cannot be stopped is logged on its app and its lease kept, expired, for a later attempt. */
  async execute(options: { all: boolean }): Promise<{ recovered: number }> {
    let recovered = 0;
    for (const lease of await this.deps.uow.repositories.deploys.list()) {
      if (!options.all && !isExpired(lease, this.deps.clock.now())) continue;
      try {
        if (await takeOver(this.deps, lease, null)) recovered++;
      } catch {
        // Logged on the app by takeOver; the others are still worth cleaning.
      }
    }
    return { recovered };
  }
}
