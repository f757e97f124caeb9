import { AlreadyExists, NotFound, Unavailable, ValidationFailed } from '../errors';
import { FollowerSlots } from './follower-slots';
import type { App, Build, Config, Container, LogEntry, Release } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import { assertPageExists, sliceOf } from '../model/pagination';
import { formatLogLine } from '../model/time';
import type { RunResult } from '../ports/services';
import { assertValidAppId, generateAppName, isAdmin } from '../rules/apps';
import { releaseEnvironment } from '../rules/config';
import { DEFAULT_RUNS_PER_USER, runSlotsOf } from '../rules/run-slots';
import { FieldErrorCollector, bodyObject, optionalString, requiredString, toInteger } from '../rules/fields';
import { loadAdministeredApp, loadVisibleApp, logEvent, type Actor, type CoreDependencies } from './context';
import { currentReleaseWithBuild, type ReleaseState } from './deploy';
import { withAppLease, type LeaseDependencies } from './leases';
import { assertAppQuotaLocked } from './quotas';
import { journal } from './journal';
import { restartStopped, schedulerUnavailable } from './scheduler-failure';

/** How many times a generated name is retried before giving up. */
const NAME_ATTEMPTS = 10;

/** Creates an app with its empty config and release v1, in one transaction. */
export class CreateApp {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids' | 'random' | 'settings' | 'logs'>) {}

  /** @throws ValidationFailed for an invalid or reserved id; AlreadyExists('id'); QuotaExceeded (apps per user). */
  async execute(actor: Actor, body: unknown): Promise<App> {
    const requested = bodyObject(body).id;
    const given = requested !== undefined && requested !== null;
    if (given) assertValidAppId(requested, this.deps.settings.reservedAppNames);

    const app = await this.deps.uow.transaction(async (repos) => {
      await assertAppQuotaLocked(repos, actor.user.username, this.deps.settings.quotas);
      let id: string;
      if (given) {
        id = requested as string;
        if (await repos.apps.findById(id)) throw new AlreadyExists('id');
      } else {
        id = await this.unusedName((candidate) => repos.apps.findById(candidate).then((a) => a !== null));
      }
      const now = this.deps.clock.now();
      const app: App = { uuid: this.deps.ids.uuid(), id, owner: actor.user.username, structure: {}, created: now, updated: now };
      await repos.apps.create(app);
      const config: Config = {
        uuid: this.deps.ids.uuid(), app: id, owner: actor.user.username,
        values: {}, memory: {}, cpu: {}, tags: {}, created: now, updated: now,
      };
      await repos.configs.create(config);
      const release: Release = {
        uuid: this.deps.ids.uuid(), app: id, owner: actor.user.username, version: 1, build: null,
        config: config.uuid, summary: `${actor.user.username} created initial release`, created: now, updated: now,
      };
      await repos.releases.create(release);
      await journal(repos, this.deps, actor, { action: 'app.create', app, target: id, summary: `${actor.user.username} created ${id}` });
      return app;
    });
    await logEvent(this.deps, app.id, `${actor.user.username} created initial release`);
    return app;
  }

  private async unusedName(taken: (name: string) => Promise<boolean>): Promise<string> {
    const reserved = this.deps.settings.reservedAppNames;
    for (let attempt = 0; attempt < NAME_ATTEMPTS; attempt++) {
      const name = generateAppName(this.deps.random, attempt);
      if (!reserved.includes(name) && !(await taken(name))) return name;
    }
    throw new Unavailable('APP.NAME_EXHAUSTED', 'Could not find an unused application name; please choose one.');
  }
}

/** Lists the apps the actor may see (all of them for administrators). */
export class ListApps {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound for a page past the end. */
  async execute(actor: Actor, page: PageRequest): Promise<Page<App>> {
    const owner = isAdmin(actor.user) ? null : actor.user.username;
    const result = await this.deps.uow.repositories.apps.listVisibleTo(owner, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** One app the actor may see. */
export class GetApp {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string): Promise<App> {
    return loadVisibleApp(this.deps.uow.repositories, actor, appId);
  }
}

/** Updates an app; today that means transferring it to another owner. */
export class UpdateApp {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'ids' | 'logs'>) {}

  /** @throws NotFound (app or new owner), AppNotVisible, Forbidden for collaborators. */
  async execute(actor: Actor, appId: string, body: unknown): Promise<App> {
    const errors = new FieldErrorCollector();
    const owner = optionalString(errors, bodyObject(body), 'owner', 1024);
    errors.throwIfAny();
    const result = await this.deps.uow.transaction(async (repos) => {
      const app = await loadAdministeredApp(repos, actor, appId, true);
      if (owner === undefined || owner === app.owner) return { app, from: null };
      if (!(await repos.users.findByUsername(owner))) throw new NotFound('USER.NOT_FOUND', 'User not found.');
      const updated: App = { ...app, owner, updated: this.deps.clock.now() };
      await repos.apps.update(updated);
      // The new owner has every right already; a collaborator entry would only list them twice.
      if (await repos.permissions.has(app.id, owner)) await repos.permissions.revoke(app.id, owner);
      await journal(repos, this.deps, actor, { action: 'app.transfer', app, target: owner, summary: `${actor.user.username} transferred ${app.id} from ${app.owner} to ${owner}` });
      return { app: updated, from: app.owner };
    });
    if (result.from !== null) {
      await logEvent(this.deps, result.app.id, `${actor.user.username} transferred ${result.app.id} from ${result.from} to ${result.app.owner}`);
    }
    return result.app;
  }
}

/** Stops an app's containers and deletes it with everything under it. */
export class DeleteApp {
  constructor(private readonly deps: LeaseDependencies & Pick<CoreDependencies, 'compiler' | 'tls' | 'images'>) {}

  /**
   * Under the app's deploy lease, stops its containers with no transaction open, then
   * deletes the app and ends the lease in one short transaction.
   * @throws NotFound, AppNotVisible, Forbidden for collaborators, Unavailable when containers cannot be stopped.
   */
  async execute(actor: Actor, appId: string): Promise<void> {
    const visible = await loadAdministeredApp(this.deps.uow.repositories, actor, appId);
    const deleted = await withAppLease(this.deps, visible.id, async (lease) => {
      const repos = this.deps.uow.repositories;
      const app = await loadAdministeredApp(repos, actor, appId);
      const containers = await repos.containers.listForApp(app.id, { includeRun: true });
      const stopped: Container[] = [];
      for (const container of containers) {
        try {
          await this.deps.scheduler.stop(container.uuid);
          stopped.push(container);
        } catch (error) {
          // The app stays, so it must keep serving: bring back what this request stopped.
          await restartStopped(this.deps.scheduler, repos, app, [...stopped, container]);
          throw schedulerUnavailable(`stop ${app.id} ${container.type}.${container.num}`, error);
        }
      }
      await this.deps.uow.transaction(async (tx) => {
        await lease.publish(tx);
        await tx.apps.delete(app.id);
        await tx.webhooks.deleteForApp(app.id);
        await journal(tx, this.deps, actor, { action: 'app.delete', app, target: app.id, summary: `${actor.user.username} deleted ${app.id}` });
      });
      return app;
    });
    try {
      await this.deps.logs.remove(appId);
    } catch {
      // The app is gone; a log file left behind is harmless and is replaced if the name is reused.
    }
    try {
      // A new app of the same name starts without the old one's HTTPS redirect; its names are
      // forgotten by the next round of automatic HTTPS.
      await this.deps.tls?.setHttpsRedirect(deleted.id, false);
    } catch {
      // The app is gone; a setting left behind matters only if a new app takes the name.
    }
    try {
      await this.deps.compiler?.removeApp(deleted.id, deleted.uuid);
    } catch {
      // The app is gone; its build cache belongs to its uuid, which no new app shares.
    }
    try {
      await this.deps.images?.removeApp?.(deleted.id, deleted.uuid);
    } catch {
      // The app is gone; its images carry its uuid, which no new app of the same name can build from or run.
    }
  }
}

export const DEFAULT_LOG_LINES = 100;
export const MAX_LOG_LINES = 10000;

/** How many lines a `log_lines` value asks for: the default when absent, at most MAX_LOG_LINES. */
function logLinesOf(logLines: unknown): number {
  if (logLines === undefined) return DEFAULT_LOG_LINES;
  const parsed = toInteger(logLines);
  if (parsed === null || parsed < 1) throw ValidationFailed.field('log_lines', 'A valid positive integer is required.');
  return Math.min(parsed, MAX_LOG_LINES);
}

/** The last lines of an app's log, formatted `<timestamp> <source>: <message>`. */
export class GetLogs {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'logs'>) {}

  /** @throws ValidationFailed for a log_lines that is not a positive integer; NotFound, AppNotVisible. */
  async execute(actor: Actor, appId: string, logLines: unknown): Promise<string[]> {
    const lines = logLinesOf(logLines);
    const app = await loadVisibleApp(this.deps.uow.repositories, actor, appId);
    const entries = await this.deps.logs.tail(app.id, lines);
    return entries.map(formatLogLine);
  }
}

/** An app's log being followed: the lines so far, and how to stop hearing of new ones. */
export interface FollowedLog {
  /** The last lines (as many as asked for, plus any appended while they were read), oldest first. */
  lines: string[];
  /** Stops the delivery of new lines; calling it again does nothing. */
  unsubscribe(): void;
}

/**
 * The last lines of an app's log and then every new line as it is appended, formatted as
 * GetLogs formats them; who may follow a log is who may read it. Each user may hold
 * `logFollowersPerUser` streams at once, and this instance `logFollowersTotal` in all.
 */
export class FollowLogs {
  private readonly slots: FollowerSlots;

  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'logs' | 'settings'>) {
    this.slots = new FollowerSlots(deps.settings, { code: 'LOGS.TOO_MANY_FOLLOWERS', streams: 'log streams', followed: 'logs' });
  }

  /**
   * Reads the last lines and subscribes `listener` to the new ones until `unsubscribe`.
   * @throws ValidationFailed for a log_lines that is not a positive integer; NotFound, AppNotVisible;
   *   TooMany (LOGS.TOO_MANY_FOLLOWERS) when the user already holds the most streams allowed;
   *   Unavailable (LOGS.TOO_MANY_FOLLOWERS) when the instance does.
   */
  async execute(actor: Actor, appId: string, logLines: unknown, listener: (lines: string[]) => void): Promise<FollowedLog> {
    const lines = logLinesOf(logLines);
    const app = await loadVisibleApp(this.deps.uow.repositories, actor, appId);
    const release = this.slots.hold(actor.user.username);
    try {
      return await this.follow(app.id, lines, listener, release);
    } catch (error) {
      release();
      throw error;
    }
  }


  /** Subscribes, then reads the tail; `release` is called once the subscription ends. */
  private async follow(appId: string, lines: number, listener: (lines: string[]) => void, release: () => void): Promise<FollowedLog> {
    // Subscribe before reading the tail, so that no line falls between the two; what both
    // return is dropped from the subscription's side.
    let seam: Seam | null = null;
    const early: LogEntry[] = [];
    let following = true;
    const stop = this.deps.logs.subscribe(appId, (entries) => {
      if (!following) return;
      if (seam === null) {
        early.push(...entries);
        return;
      }
      const fresh = seam.pass(entries);
      if (fresh.length > 0) listener(fresh.map(formatLogLine));
    });
    const unsubscribe = (): void => {
      following = false;
      stop();
      release();
    };

    let initial: LogEntry[];
    try {
      initial = await this.deps.logs.tail(appId, lines);
    } catch (error) {
      unsubscribe();
      throw error;
    }
    const opened = new Seam(initial);
    seam = opened;
    // Lines that arrived while the tail was read go out with it, ahead of any later line.
    const arrived = opened.pass(early.splice(0));
    return { lines: [...initial, ...arrived].map(formatLogLine), unsubscribe };
  }
}

/**
 * Drops, from the start of a subscription's stream, the entries that the tail read next to
 * it already holds: the stream may begin inside the tail (at any of its entries) and from
 * there repeats it to its end. Entries are compared by time, source and message.
 */
class Seam {
  private tail: LogEntry[];
  /** The tail position the next repeated entry must match; null before the first entry. */
  private next: number | null = null;

  constructor(tail: LogEntry[]) {
    this.tail = tail;
  }

  /** The entries that are new, in order. */
  pass(entries: LogEntry[]): LogEntry[] {
    const fresh: LogEntry[] = [];
    for (const entry of entries) {
      if (this.tail.length === 0) {
        fresh.push(entry);
      } else if (this.next === null) {
        const at = lastIndexOfEntry(this.tail, entry);
        if (at === -1) this.close(fresh, entry);
        else this.advance(at + 1);
      } else if (sameEntry(this.tail[this.next], entry)) {
        this.advance(this.next + 1);
      } else {
        this.close(fresh, entry);
      }
    }
    return fresh;
  }

  private advance(next: number): void {
    this.next = next;
    if (next >= this.tail.length) this.tail = [];
  }

  /** The stream has left the tail: this entry and everything after it are new. */
  private close(fresh: LogEntry[], entry: LogEntry): void {
    this.tail = [];
    fresh.push(entry);
  }
}

function sameEntry(a: LogEntry | undefined, b: LogEntry): boolean {
  return a !== undefined && a.time.getTime() === b.time.getTime() && a.source === b.source && a.message === b.message;
}

function lastIndexOfEntry(entries: readonly LogEntry[], entry: LogEntry): number {
  for (let i = entries.length - 1; i >= 0; i--) if (sameEntry(entries[i], entry)) return i;
  return -1;
}

/** Runs a one-off command on the current release and waits for it. */
export class RunCommand {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'scheduler' | 'ids' | 'clock' | 'timer' | 'logs' | 'settings' | 'runSlots'>) {}

  /**
   * The run holds one of the owner's run slots while it runs (`settings.runsPerUser`, ADR 0037).
   * @throws ValidationFailed without a command; NoBuild; NotFound, AppNotVisible; TooMany
   *   (`RUN.TOO_MANY`) past the owner's quota; Unavailable when the scheduler fails.
   */
  async execute(actor: Actor, appId: string, body: unknown): Promise<RunResult> {
    const errors = new FieldErrorCollector();
    const command = requiredString(errors, bodyObject(body), 'command', 64 * 1024);
    if (command !== undefined && command.trim() === '') errors.add('command', 'This field may not be blank.');
    errors.throwIfAny();

    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const state = await currentReleaseWithBuild(repos, app.id);
    // Charged to the app's owner, whoever runs it, as the app's scaled processes are.
    const releaseSlot = await runSlotsOf(this.deps).take(app.owner, this.deps.settings.runsPerUser ?? DEFAULT_RUNS_PER_USER);
    try {
      return await this.runOnce(actor, app, state, command!);
    } finally {
      await releaseSlot();
    }
  }

  /** Records the run's container, runs the command through the scheduler, removes the record and journals the run. */
  private async runOnce(actor: Actor, app: App, state: ReleaseState & { build: Build }, command: string): Promise<RunResult> {
    const repos = this.deps.uow.repositories;
    const runs = await repos.containers.listForApp(app.id, { type: 'run' });
    const now = this.deps.clock.now();
    const container: Container = {
      uuid: this.deps.ids.uuid(), app: app.id, owner: actor.user.username, release: state.release.version,
      type: 'run', num: runs.reduce((max, c) => Math.max(max, c.num), 0) + 1, state: 'up', created: now, updated: now,
    };
    await repos.containers.create(container);
    await logEvent(this.deps, app.id, `${actor.user.username} runs '${command}'`);
    let result: RunResult;
    try {
      result = await this.deps.scheduler.run({
        app: app.id,
        release: state.release.version,
        image: state.build.image,
        workdir: state.build.workdir ?? null,
        command,
        env: releaseEnvironment(state.config.values, app.id, state.release.version),
        timeoutSeconds: this.deps.settings.runTimeoutSeconds,
        outputLimitBytes: this.deps.settings.runOutputLimitBytes,
      });
    } catch (error) {
      throw schedulerUnavailable('run the command', error);
    } finally {
      await repos.containers.delete(container.uuid);
    }
    // Journalled once it ran: a run the scheduler could not carry out leaves no trace, as a failed change leaves no row.
    await journal(repos, this.deps, actor, { action: 'container.run', app, target: `run.${container.num}`, summary: `${actor.user.username} ran a one-off command` });
    return result;
  }
}
