import { DEFAULT_SETTINGS, createUseCases, type Actor, type CoreDependencies, type Settings, type UseCases } from '@svc/core';
import {
  FakeCertificateParser,
  FakePasswordHasher,
  FakeScheduler,
  FakeSecretBox,
  FakeTokenGenerator,
  InMemoryLogStore,
  InMemoryUnitOfWork,
  SeededRandom,
  SequentialIdGenerator,
} from '@svc/core/testing';
import { Ssh2PublicKeyParser } from '@svc/ssh-keys-ssh2';

/**
 * The core over in-memory fakes, with the real SSH key parser (so registered fingerprints
 * are the ones an SSH client presents) and a scheduler that records what it starts.
 */
export class FakeController {
  readonly uow = new InMemoryUnitOfWork();
  readonly scheduler = new FakeScheduler();
  readonly logs = new InMemoryLogStore();
  readonly tokens = new FakeTokenGenerator();
  readonly deps: CoreDependencies;
  readonly useCases: UseCases;

  constructor(settings: Partial<Settings> = {}, builds: Pick<CoreDependencies, 'compiler' | 'buildpacks'> = {}) {
    this.deps = {
      uow: this.uow,
      scheduler: this.scheduler,
      logs: this.logs,
      keyParser: new Ssh2PublicKeyParser(),
      certificateParser: new FakeCertificateParser(),
      passwords: new FakePasswordHasher(),
      tokens: this.tokens,
      secrets: new FakeSecretBox(),
      clock: { now: () => new Date() },
      // Real time, as the clock: nothing here moves time by hand.
      timer: {
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        every: (ms, task) => {
          const handle = setInterval(task, ms);
          handle.unref();
          return () => clearInterval(handle);
        },
      },
      ids: new SequentialIdGenerator({ namespace: 7 }),
      random: new SeededRandom(),
      settings: { ...DEFAULT_SETTINGS, ...settings },
      ...builds,
    };
    this.useCases = createUseCases(this.deps);
  }

  /** Registers a user (the first becomes administrator) and resolves with them as an actor. */
  async user(username: string): Promise<Actor> {
    const user = await this.useCases.registerUser.execute({ username, password: 'secret-pass', email: `${username}@example.com` }, null);
    return { user, tokenHash: this.tokens.hash(this.tokens.generate()) };
  }

  /** Release versions of an app, oldest first. */
  releaseVersions(app: string): number[] {
    return this.uow
      .snapshot()
      .releases.filter((r) => r.app === app)
      .map((r) => r.version);
  }
}
