import { NotFound, RequestRejected, ValidationFailed } from '../errors';
import type { App, Build, Config, Release } from '../model/entities';
import type { Page, PageRequest } from '../model/pagination';
import type { Repositories } from '../ports/repositories';
import {
  assertServiceVariablesCurrent,
  describeConfigChange,
  mergeConfig,
  parseConfigChanges,
  PROCESS_TYPE_PATTERN,
} from '../rules/config';
import { FieldErrorCollector, bodyObject, isPlainObject, optionalString, requiredString, toInteger } from '../rules/fields';
import { describeDeploy, structureForBuild } from '../rules/releases';
import { planSourceBuild, type SourceFiles } from '../rules/sources';
import { loadVisibleApp, logEvent, pageUnderApp, type Actor, type CoreDependencies } from './context';
import { currentRelease, deployRelease, releaseState, withRollout, type ReleaseState } from './deploy';
import { keyActor, retainedBuilds, userOfKey } from './sources';

type ReleaseDeps = Pick<CoreDependencies, 'uow' | 'scheduler' | 'ids' | 'clock' | 'logs'>;

/** What a new release points to, and what it says about itself (without the actor's name). */
interface ReleaseChange {
  config: Config;
  build: Build | null;
  summary: string;
}

/** A new release of an app, with the app as it is after the release. */
export interface PublishedRelease extends ReleaseState {
  app: App;
}

/**
 * Creates the next release of an app and deploys it, all in one transaction: the release,
 * the config or build it introduces, the app's structure and its containers are written
 * together or not at all.
 */
async function publishRelease<C extends ReleaseChange>(
  deps: ReleaseDeps,
  actor: Actor,
  appId: string,
  change: (repos: Repositories, current: ReleaseState, app: App) => Promise<C>,
): Promise<PublishedRelease & { build: C['build'] }> {
  const published = await withRollout(deps, async (repos, rolloutFor) => {
    let app = await loadVisibleApp(repos, actor, appId, true);
    const current = await currentRelease(repos, app.id);
    const next = await change(repos, current, app);
    const now = deps.clock.now();
    const release: Release = {
      uuid: deps.ids.uuid(),
      app: app.id,
      owner: actor.user.username,
      version: current.release.version + 1,
      build: next.build?.uuid ?? null,
      config: next.config.uuid,
      summary: `${actor.user.username} ${next.summary}`,
      created: now,
      updated: now,
    };
    await repos.releases.create(release);
    const state: ReleaseState = { release, build: next.build, config: next.config };
    const rollout = rolloutFor(app);
    if (next.build) {
      const structure = structureForBuild(app.structure, next.build.procfile);
      if (JSON.stringify(structure) !== JSON.stringify(app.structure)) {
        app = { ...app, structure, updated: now };
        await repos.apps.update(app);
      }
      await deployRelease(repos, rollout, { ...state, build: next.build }, structure);
    } else {
      // A release without a build has nothing to run.
      for (const container of await repos.containers.listForApp(app.id)) await rollout.retire(repos, container);
    }
    return { app, ...state, build: next.build };
  });
  await logEvent(deps, published.app.id, published.release.summary);
  return published;
}

/** The current config of an app, with the release it belongs to. */
export class GetConfig {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string): Promise<ReleaseState> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    return currentRelease(repos, app.id);
  }
}

/** Merges changes into the current config and releases it. */
export class SetConfig {
  constructor(private readonly deps: ReleaseDeps) {}

  /** @throws ValidationFailed, NotFound, AppNotVisible, Unavailable (scheduler) */
  async execute(actor: Actor, appId: string, body: unknown): Promise<PublishedRelease> {
    const changes = parseConfigChanges(body);
    return publishRelease(this.deps, actor, appId, async (repos, current, app) => {
      assertServiceVariablesCurrent(changes, { SVC_APP: app.id, SVC_RELEASE: `v${current.release.version}` });
      const merged = mergeConfig(current.config, changes);
      const now = this.deps.clock.now();
      const config: Config = {
        uuid: this.deps.ids.uuid(),
        app: app.id,
        owner: actor.user.username,
        ...merged,
        created: now,
        updated: now,
      };
      await repos.configs.create(config);
      return { config, build: current.build, summary: describeConfigChange(current.config, merged) };
    });
  }
}

const SHA_PATTERN = /^[0-9a-f]{7,40}$/i;
const IMAGE_PATTERN = /^[^\s]+$/;

function parseBuild(body: unknown): Pick<Build, 'image' | 'procfile' | 'sha' | 'dockerfile'> {
  const input = bodyObject(body);
  const errors = new FieldErrorCollector();
  const image = requiredString(errors, input, 'image', 512);
  if (image !== undefined && !IMAGE_PATTERN.test(image)) errors.add('image', 'Enter a valid image reference.');
  const sha = optionalString(errors, input, 'sha', 40) ?? '';
  if (sha !== '' && !SHA_PATTERN.test(sha)) errors.add('sha', 'A sha is 7 to 40 hexadecimal characters.');
  const dockerfile = optionalString(errors, input, 'dockerfile', 1024 * 1024) ?? '';
  const procfile: Record<string, string> = {};
  const rawProcfile = input.procfile;
  if (rawProcfile !== undefined && rawProcfile !== null) {
    if (!isPlainObject(rawProcfile)) {
      errors.add('procfile', 'Expected a dictionary of process types to commands.');
    } else {
      for (const [type, command] of Object.entries(rawProcfile)) {
        if (!PROCESS_TYPE_PATTERN.test(type)) errors.add('procfile', `Process types can only contain [a-z0-9-_]: ${type}`);
        else if (typeof command !== 'string' || command.trim() === '') errors.add('procfile', `The command of ${type} must be a non-empty string.`);
        else procfile[type] = command;
      }
    }
  }
  errors.throwIfAny();
  return { image: image!, procfile, sha: sha.toLowerCase(), dockerfile };
}

/** Records a build and releases it onto the current config. */
export class CreateBuild {
  constructor(private readonly deps: ReleaseDeps) {}

  /** @throws ValidationFailed, NotFound, AppNotVisible, Unavailable (scheduler) */
  async execute(actor: Actor, appId: string, body: unknown): Promise<PublishedRelease & { build: Build }> {
    const fields = parseBuild(body);
    return publishRelease(this.deps, actor, appId, async (repos, current, app) => {
      const now = this.deps.clock.now();
      const build: Build = {
        uuid: this.deps.ids.uuid(), app: app.id, owner: actor.user.username, ...fields, workdir: null, created: now, updated: now,
      };
      await repos.builds.create(build);
      return { config: current.config, build, summary: describeDeploy(build) };
    });
  }
}

/** A commit pushed to an app's repository, with the files that decide how it runs. */
export interface PushedSource extends SourceFiles {
  /** The full commit id. */
  sha: string;
  /** Where the commit is checked out on the controller's machine; the build's processes run there. */
  workdir: string;
}

/** Builds a pushed commit and releases it onto the current config, acting as the holder of the SSH key that pushed it. */
export class DeploySource {
  constructor(private readonly deps: ReleaseDeps) {}

  /**
   * @throws NotAuthenticated when the key is no longer registered; RequestRejected
   *   `BUILD.NOTHING_TO_RUN` without a Procfile and a Dockerfile; ValidationFailed (procfile,
   *   dockerfile, sha, workdir); NotFound, AppNotVisible; Unavailable (scheduler).
   */
  async execute(fingerprint: string, appId: string, source: PushedSource): Promise<PublishedRelease & { build: Build }> {
    const plan = planSourceBuild(appId, source.sha, source);
    if (source.workdir.trim() === '') throw ValidationFailed.field('workdir', 'A source build needs the directory it is checked out in.');
    const actor = keyActor(await userOfKey(this.deps.uow.repositories, fingerprint));
    return publishRelease(this.deps, actor, appId, async (repos, current, app) => {
      const now = this.deps.clock.now();
      const build: Build = {
        uuid: this.deps.ids.uuid(), app: app.id, owner: actor.user.username, ...plan, workdir: source.workdir, created: now, updated: now,
      };
      await repos.builds.create(build);
      return { config: current.config, build, summary: describeDeploy(build) };
    });
  }
}

/** Makes a new release from an earlier one's build and config. */
export class Rollback {
  constructor(private readonly deps: ReleaseDeps & Pick<CoreDependencies, 'settings'>) {}

  /**
   * Without a version, rolls back to the release before the current one.
   * @throws ValidationFailed for a version that is not an integer; RequestRejected below 1,
   *   or `RELEASE.SOURCE_REMOVED` for a pushed build whose source is no longer kept;
   *   NotFound for a version that does not exist; Unavailable (scheduler).
   */
  async execute(actor: Actor, appId: string, body: unknown): Promise<PublishedRelease> {
    const raw = bodyObject(body).version;
    let requested: number | null = null;
    if (raw !== undefined && raw !== null) {
      requested = toInteger(raw);
      if (requested === null) throw ValidationFailed.field('version', 'A valid integer is required.');
    }
    return publishRelease(this.deps, actor, appId, async (repos, current) => {
      const version = requested ?? current.release.version - 1;
      if (version < 1) throw new RequestRejected('RELEASE.VERSION_BELOW_ONE', 'version cannot be below 1');
      // Versions run from 1 to the current one without gaps: a later one cannot exist, and
      // asking storage for it could overflow its integer column.
      const target = version > current.release.version ? null : await repos.releases.findByVersion(current.release.app, version);
      if (!target) throw new NotFound('RELEASE.NOT_FOUND', `Release v${version} not found.`);
      const state = await releaseState(repos, target);
      const retention = this.deps.settings.buildRetention;
      if (state.build?.workdir && !(await retainedBuilds(repos, target.app, retention)).has(state.build.uuid)) {
        throw new RequestRejected(
          'RELEASE.SOURCE_REMOVED',
          `Release v${version} can no longer be rolled back to: only the last ${retention} builds keep their source.`,
        );
      }
      return { config: state.config, build: state.build, summary: `rolled back to v${version}` };
    });
  }
}

/** Lists an app's builds, newest first. */
export class ListBuilds {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, page: PageRequest): Promise<Page<Build>> {
    const repos = this.deps.uow.repositories;
    return pageUnderApp(repos, actor, appId, page, (app, slice) => repos.builds.listForApp(app, slice));
  }
}

/** Lists an app's releases, newest first. */
export class ListReleases {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound, AppNotVisible */
  async execute(actor: Actor, appId: string, page: PageRequest): Promise<Page<Release>> {
    const repos = this.deps.uow.repositories;
    return pageUnderApp(repos, actor, appId, page, (app, slice) => repos.releases.listForApp(app, slice));
  }
}

/** One release of an app by version. */
export class GetRelease {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws NotFound (app or version), AppNotVisible */
  async execute(actor: Actor, appId: string, version: number): Promise<Release> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const release = await repos.releases.findByVersion(app.id, version);
    if (!release) throw new NotFound('RELEASE.NOT_FOUND', `Release v${version} not found.`);
    return release;
  }
}
