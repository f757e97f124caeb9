import { DEFAULT_SETTINGS, DomainError, createUseCases } from '@svc/core';
import type { Actor, App, BuildpackCatalog, CoreDependencies, ImageBuilder, Settings, SourceCompiler, UseCases, User } from '@svc/core';
import {
  FakeCertificateParser,
  FakePasswordHasher,
  FakePublicKeyParser,
  FakeScheduler,
  FakeSecretBox,
  FakeTokenGenerator,
  InMemoryLogStore,
  InMemoryUnitOfWork,
  ManualClock,
  SeededRandom,
  SequentialIdGenerator,
  aToken,
  aUser,
} from '@svc/core/testing';

/**
 * Every port of the core backed by a fake, the use cases built over them with
 * `createUseCases`, and helpers to put users and apps in place.
 */
export class World {
  readonly uow = new InMemoryUnitOfWork();
  readonly scheduler = new FakeScheduler();
  readonly logs = new InMemoryLogStore();
  readonly clock = new ManualClock();
  readonly ids = new SequentialIdGenerator();
  readonly tokens = new FakeTokenGenerator();
  readonly passwords = new FakePasswordHasher();
  readonly secrets = new FakeSecretBox();
  readonly random = new SeededRandom();
  readonly keyParser = new FakePublicKeyParser();
  readonly certificateParser = new FakeCertificateParser();
  readonly settings: Settings;
  readonly deps: CoreDependencies;
  readonly useCases: UseCases;

  constructor(
    settings: Partial<Settings> = {},
    images: ImageBuilder | null = null,
    builds: { compiler?: SourceCompiler | null; buildpacks?: BuildpackCatalog | null } = {},
    extra: Pick<CoreDependencies, 'tls' | 'acme'> = {},
  ) {
    this.settings = { ...DEFAULT_SETTINGS, ...settings };
    this.deps = {
      uow: this.uow,
      scheduler: this.scheduler,
      logs: this.logs,
      keyParser: this.keyParser,
      certificateParser: this.certificateParser,
      passwords: this.passwords,
      tokens: this.tokens,
      secrets: this.secrets,
      clock: this.clock,
      timer: this.clock,
      ids: this.ids,
      random: this.random,
      settings: this.settings,
      images,
      ...builds,
      ...extra,
    };
    this.useCases = createUseCases(this.deps);
  }

  /**
   * Stores a user (password `secret`) with one fresh token and returns them as an actor.
   * An existing user only gets a new token.
   */
  async actor(username: string, options: { admin?: boolean; password?: string } = {}): Promise<Actor> {
    const repos = this.uow.repositories;
    let user: User | null = await repos.users.findByUsername(username);
    if (!user) {
      const { id: _id, ...fields } = aUser({
        username,
        isSuperuser: options.admin === true,
        isStaff: options.admin === true,
        ...(options.password === undefined ? {} : { passwordHash: `fake:${options.password}` }),
      });
      user = await repos.users.create(fields);
    }
    const token = this.tokens.generate();
    const tokenHash = this.tokens.hash(token);
    await repos.tokens.add(aToken({ hash: tokenHash, username, created: this.clock.now() }));
    return { user, tokenHash };
  }

  /** The actor again, with the user as currently stored (after a change of rights or password). */
  async refresh(actor: Actor): Promise<Actor> {
    const user = await this.uow.repositories.users.findByUsername(actor.user.username);
    if (!user) throw new Error(`${actor.user.username} no longer exists`);
    return { user, tokenHash: actor.tokenHash };
  }

  /** Creates an app through the use case. */
  async app(owner: Actor, id = 'myapp'): Promise<App> {
    return this.useCases.createApp.execute(owner, { id });
  }

  /** Creates an app and deploys a build with the given Procfile (one `web` by default). */
  async deployedApp(owner: Actor, id = 'myapp', procfile: Record<string, string> = { web: 'node server.js' }): Promise<App> {
    await this.app(owner, id);
    const published = await this.useCases.createBuild.execute(owner, id, { image: `example/${id}:v1`, procfile });
    return published.app;
  }

  /** Token hashes currently stored for a user. */
  tokenHashesOf(username: string): string[] {
    return this.uow.snapshot().tokens.filter((t) => t.username === username).map((t) => t.hash);
  }

  /** Containers recorded for an app (run containers too), as `type.num` on `v<release>`, sorted. */
  recordedContainers(app = 'myapp'): string[] {
    return this.uow
      .snapshot()
      .containers.filter((c) => c.app === app)
      .map((c) => `${c.type}.${c.num}@v${c.release}`)
      .sort();
  }

  /** Containers the scheduler holds as running for an app, as `type.num` on `v<release>`, sorted. */
  runningContainers(app = 'myapp'): string[] {
    return this.scheduler
      .running()
      .filter((c) => c.spec.app === app)
      .map((c) => `${c.spec.type}.${c.spec.num}@v${c.spec.release}`)
      .sort();
  }

  /** Release versions of an app, oldest first. */
  releaseVersions(app = 'myapp'): number[] {
    return this.uow
      .snapshot()
      .releases.filter((r) => r.app === app)
      .map((r) => r.version);
  }
}

/** The error a promise rejects with; fails the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    if (DomainError.is(error)) return error;
    throw error;
  }
  throw new Error('Expected a DomainError, but the promise resolved');
}

/** The error a function throws synchronously; fails the test when it returns. */
export function thrownBy(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    if (DomainError.is(error)) return error;
    throw error;
  }
  throw new Error('Expected a DomainError, but nothing was thrown');
}
