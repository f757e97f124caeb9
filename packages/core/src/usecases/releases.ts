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
import { BuildSlots, InMemoryBuildSlotStore } from '../rules/build-slots';
import { assertConfigQuota, processCount } from '../rules/quotas';
import { describeDeploy, structureForBuild } from '../rules/releases';
import { isDigestReference, planSourceBuild, releaseImage, type SourceFiles } from '../rules/sources';
import { loadVisibleApp, logEvent, pageUnderApp, type Actor, type CoreDependencies } from './context';
import { journal } from './journal';
import { assertIfMatch, configEtag } from '../rules/etags';
import { carryOut, currentRelease, planRelease, releaseState, Rollout, type ReleaseState } from './deploy';
import { withAppLease, type CommittedChange, type LeaseDependencies } from './leases';
import { observeDeploy } from './observe';
import { runReleasePhase } from './release-phase';
import { compileSource, type CompiledBuild } from './buildpacks';
import { assertScaleQuotas, assertScaleQuotasLocked } from './quotas';
import { buildSourceImage, discardSourceImage, keyActor, pruneSourceImages, tagSourceImage, userOfKey } from './sources';
import { assertRollbackRuns } from './rollback-checks';

type ReleaseDeps = LeaseDependencies & Pick<CoreDependencies, 'deployObserver' | 'runSlots'>;

/** What a new release points to, what it says about itself (without the actor's name), and what it adds. */
interface ReleaseChange {
  config: Config;
  build: Build | null;
  summary: string;
  /** The config or build this release introduces, written when it is published. */
  creates: { config?: Config; build?: Build };
}

/** A new release of an app, with the app as it is after the release. */
export interface PublishedRelease extends ReleaseState {
  app: App;
}

/** The next release of `app` after `current`, pointing to what `next` says. */
function nextRelease(deps: ReleaseDeps, actor: Actor, app: App, current: ReleaseState, next: ReleaseChange): Release {
  const now = deps.clock.now();
  return {
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
}

/**
 * Inside the publishing transaction, with the app row locked: checks the quotas on what is
 * committed now and writes the release, what it introduces, its journal entries and the
 * app's new structure.
 * @returns the app as it is after the release.
 */
async function writeRelease(
  deps: ReleaseDeps,
  tx: Repositories,
  actor: Actor,
  locked: App,
  release: Release,
  next: ReleaseChange,
  structure: App['structure'],
): Promise<App> {
  await assertScaleQuotasLocked(tx, locked, structure, deps.settings.quotas);
  if (next.creates.config) await tx.configs.create(next.creates.config);
  if (next.creates.build) await tx.builds.create(next.creates.build);
  await tx.releases.create(release);
  const app = locked.id;
  // Read once for the two entries of the release.
  const hooks = await tx.webhooks.allForApp(app);
  const { summary } = release;
  if (next.creates.config) await journal(tx, deps, actor, { action: 'config.update', app: locked, target: `v${release.version}`, summary }, hooks);
  if (next.creates.build) await journal(tx, deps, actor, { action: 'build.create', app: locked, target: next.creates.build.uuid, summary }, hooks);
  await journal(tx, deps, actor, { action: 'release.create', app: locked, target: `v${release.version}`, summary }, hooks);
  if (JSON.stringify(structure) === JSON.stringify(locked.structure)) return locked;
  const published = { ...locked, structure, updated: release.created };
  await tx.apps.update(published);
  return published;
}

/**
 * A release without a build, made whole in the transaction `tx` (which holds the app's
 * lease): it starts nothing, so it needs no lease kept while a scheduler works. The app's
 * containers, if any, are retired as in `publishRelease`, after the commit. Null, with
 * nothing worth keeping written, for a change that brings a build (its containers start
 * with no transaction open).
 */
async function publishInTransaction<C extends ReleaseChange>(
  deps: ReleaseDeps,
  actor: Actor,
  appId: string,
  change: (repos: Repositories, current: ReleaseState, app: App) => Promise<C>,
  tx: Repositories,
): Promise<CommittedChange<PublishedRelease & { build: C['build'] }> | null> {
  const locked = await loadVisibleApp(tx, actor, appId, true);
  const current = await currentRelease(tx, locked.id);
  const next = await change(tx, current, locked);
  if (next.build !== null) return null;
  const release = nextRelease(deps, actor, locked, current, next);
  const rollout = new Rollout(deps, locked);
  for (const container of await tx.containers.listForApp(locked.id)) rollout.retire(container);
  const app = await writeRelease(deps, tx, actor, locked, release, next, locked.structure);
  await rollout.write(tx);
  return { result: { app, release, build: next.build, config: next.config }, afterCommit: () => rollout.finish() };
}

/** How `publishRelease` may make its change. */
interface PublishOptions {
  /**
   * Try the change whole in one transaction first (see `publishInTransaction`): right for
   * changes that usually bring no build, such as config changes of apps never deployed.
   */
  oneTransaction?: boolean;
}

/**
 * Creates the next release of an app and deploys it under the app's deploy lease. `change`
 * only reads: the release, the config or build it introduces, the app's structure and its
 * containers are written together, in one short transaction once the new containers run,
 * or not at all; until then none of it is visible. A release without a build starts no
 * container: with `oneTransaction` it is made in one transaction that holds the lease too.
 */
async function publishRelease<C extends ReleaseChange>(
  deps: ReleaseDeps,
  actor: Actor,
  appId: string,
  change: (repos: Repositories, current: ReleaseState, app: App) => Promise<C>,
  output: (line: string) => void = () => undefined,
  options: PublishOptions = {},
): Promise<PublishedRelease & { build: C['build'] }> {
  const visible = await loadVisibleApp(deps.uow.repositories, actor, appId);
  // An app that runs processes has a build, and a change of it starts containers: trying
  // it in one transaction first would only be undone.
  const oneTransaction =
    options.oneTransaction === true && processCount(visible.structure) === 0
      ? (tx: Repositories) => publishInTransaction(deps, actor, appId, change, tx)
      : undefined;
  // Every deploy passes here: the one place where the observer (metrics) sees it.
  const published = await observeDeploy(deps, appId, withAppLease(deps, visible.id, async (lease) => {
    // Read again under the lease: whatever ran before it is published by now.
    const repos = deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const current = await currentRelease(repos, app.id);
    const next = await change(repos, current, app);
    const release = nextRelease(deps, actor, app, current, next);
    const state: ReleaseState = { release, build: next.build, config: next.config };
    const rollout = new Rollout(deps, app);
    const structure = next.build ? structureForBuild(app.structure, next.build.procfile) : app.structure;
    // The processes a deploy starts count like scaled ones: a first deploy's default `web=1` too.
    await assertScaleQuotas(repos, app, structure, deps.settings.quotas);
    if (next.build) {
      // Before any process of the release starts: a failure leaves the old release serving and nothing written.
      await runReleasePhase(deps, app, { ...state, build: next.build }, output);
      await planRelease(repos, rollout, { ...state, build: next.build }, structure);
    } else {
      // A release without a build has nothing to run.
      for (const container of await repos.containers.listForApp(app.id)) rollout.retire(container);
    }
    return carryOut(deps, lease, rollout, release.version, async (tx) => {
      const locked = await loadVisibleApp(tx, actor, appId, true);
      const published = await writeRelease(deps, tx, actor, locked, release, next, structure);
      return { app: published, ...state, build: next.build };
    });
  }, oneTransaction));
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
  constructor(private readonly deps: ReleaseDeps & Pick<CoreDependencies, 'settings'>) {}

  /** @throws ValidationFailed, QuotaExceeded (config size), NotFound, AppNotVisible, Unavailable (scheduler) */
  async execute(actor: Actor, appId: string, body: unknown): Promise<PublishedRelease> {
    const changes = parseConfigChanges(body);
    return publishRelease(this.deps, actor, appId, async (repos, current, app) => {
      assertServiceVariablesCurrent(changes, { SVC_APP: app.id, SVC_RELEASE: `v${current.release.version}` });
      assertIfMatch(actor.request?.ifMatch, configEtag(current.config));
      const merged = mergeConfig(current.config, changes);
      assertConfigQuota(merged.values, this.deps.settings.quotas, current.config.values);
      const now = this.deps.clock.now();
      const config: Config = {
        uuid: this.deps.ids.uuid(),
        app: app.id,
        owner: actor.user.username,
        ...merged,
        created: now,
        updated: now,
      };
      return { config, build: current.build, summary: describeConfigChange(current.config, merged), creates: { config } };
    }, undefined, { oneTransaction: true });
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
      return { config: current.config, build, summary: describeDeploy(build), creates: { build } };
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
  /** The builds each user runs now (at most `settings.buildsPerUser` at once). */
  private readonly builds: BuildSlots;

  constructor(private readonly deps: ReleaseDeps & Pick<CoreDependencies, 'images' | 'settings' | 'compiler' | 'buildpacks' | 'buildSlots'>) {
    this.builds = new BuildSlots(deps.buildSlots ?? new InMemoryBuildSlotStore(), deps.clock, deps.timer, deps.ids);
  }

  /**
   * Whether commits without a Dockerfile are compiled with buildpacks (a compiler and a
   * catalog are configured): such a commit needs no Procfile, the compile decides what runs.
   */
  get compilesWithBuildpacks(): boolean {
    return (this.deps.compiler ?? null) !== null && (this.deps.buildpacks ?? null) !== null;
  }

  /**
   * A commit with a Dockerfile is built into an image by the image builder; one without is
   * compiled with buildpacks when they are configured (`BUILDPACK_URL` in the app's config
   * picks them; the buildpack's default process types are overridden by the Procfile's), or,
   * with an image builder only, laid onto the stack image. Builds happen first, after the
   * visibility check and outside any transaction, their output sent to `output` line by
   * line; an image result is then named `<app>:<version>` and records no workdir. Without
   * any builder the build runs from its checkout (`workdir`). A build with a `release`
   * process type runs it before its processes start (see `runReleasePhase`).
   * @throws NotAuthenticated when the key is no longer registered; RequestRejected
   *   `BUILD.NOTHING_TO_RUN` without a Procfile and a Dockerfile (or, compiled, without any
   *   process type), `BUILD.FAILED` when the source does not build, `BUILD.NO_BUILDPACK`,
   *   `BUILD.BUILDPACK_NOT_ALLOWED`, `BUILD.BUILDPACK_UNKNOWN`, `BUILD.BUILDPACK_FETCH`,
   *   `BUILD.RELEASE_INVALID`; ValidationFailed (procfile, dockerfile, sha, workdir);
   *   NotFound, AppNotVisible; Unavailable (scheduler, builders, `RELEASE.PHASE_FAILED`).
   */
  async execute(
    fingerprint: string,
    appId: string,
    source: PushedSource,
    output: (line: string) => void = () => undefined,
  ): Promise<PublishedRelease & { build: Build }> {
    const compiling = this.compilesWithBuildpacks && source.dockerfile === null;
    const plan = planSourceBuild(appId, source.sha, source, { compiled: compiling });
    if (source.workdir.trim() === '') throw ValidationFailed.field('workdir', 'A source build needs the directory it is checked out in.');
    const repos = this.deps.uow.repositories;
    const actor = keyActor(await userOfKey(repos, fingerprint));
    const images = this.deps.images ?? null;
    let image: string | null = null;
    let compiled: CompiledBuild | null = null;
    if (compiling || images !== null) {
      // Nobody waits on a build the pusher may not release.
      const app = await loadVisibleApp(repos, actor, appId);
      const release = await this.builds.take(actor.user.username, this.deps.settings.buildsPerUser);
      try {
        if (compiling) {
          const { config } = await currentRelease(repos, app.id);
          const ports = { compiler: this.deps.compiler!, buildpacks: this.deps.buildpacks! };
          const request = { app: app.id, appUuid: app.uuid, directory: source.workdir, env: { ...config.values } };
          compiled = await compileSource(ports, this.deps.settings, request, plan.procfile, output, source.buildpacks ?? null);
          image = compiled.source.image;
        } else if (images !== null) {
          const kind = source.dockerfile !== null ? 'dockerfile' : 'procfile';
          image = await buildSourceImage(images, { app: app.id, appUuid: app.uuid, directory: source.workdir, kind }, output);
        }
      } finally {
        await release();
      }
    }
    let published: PublishedRelease & { build: Build };
    try {
      published = await publishRelease(this.deps, actor, appId, async (_repos, current, app) => {
        const now = this.deps.clock.now();
        let fields: Pick<Build, 'image' | 'workdir' | 'procfile'> = {
          image: plan.image,
          workdir: compiled?.source.workdir ?? source.workdir,
          procfile: compiled?.procfile ?? plan.procfile,
        };
        if (image !== null) {
          // The version is final here: the app's deploy lease is held until the release is published.
          const name = releaseImage(app.id, current.release.version + 1);
          // A build pushed to a registry is recorded by its digest, which every node pulls;
          // the engine that built it still names it `<app>:<version>`. Without an image
          // builder to name it, a compiled image is recorded as the compiler gave it.
          if (images !== null) await tagSourceImage(images, image, name);
          const recorded = isDigestReference(image) || images === null ? image : name;
          fields = { ...fields, image: recorded, workdir: compiled?.source.workdir ?? null };
        }
        const build: Build = {
          uuid: this.deps.ids.uuid(), app: app.id, owner: actor.user.username, ...plan, ...fields, created: now, updated: now,
        };
        return { config: current.config, build, summary: describeDeploy(build), creates: { build } };
      }, output);
    } catch (error) {
      if (images !== null && image !== null) await discardSourceImage(images, image);
      throw error;
    }
    if (images !== null) await pruneSourceImages(this.deps, images, published.app.id);
    return published;
  }
}

/** Makes a new release from an earlier one's build and config. */
export class Rollback {
  constructor(private readonly deps: ReleaseDeps & Pick<CoreDependencies, 'settings'>) {}

  /**
   * Without a version, rolls back to the release before the current one. A rollback that
   * would leave the app not running is refused before anything starts or stops (see
   * `assertRollbackRuns`); among the releases of an app that never had a build it is allowed.
   * @throws ValidationFailed for a version that is not an integer; RequestRejected below 1,
   *   or `RELEASE.SOURCE_REMOVED` for a pushed build whose source is no longer kept;
   *   NotFound for a version that does not exist; RollbackWithoutBuild for a release without
   *   a build while the current one has one; BuildNotRunnable for a build the scheduler says
   *   it cannot run; Unavailable (scheduler).
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
      const checks = { scheduler: this.deps.scheduler, buildRetention: this.deps.settings.buildRetention };
      await assertRollbackRuns(checks, repos, current, state, current.release.version + 1);
      return { config: state.config, build: state.build, summary: `rolled back to v${version}`, creates: {} };
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
