import fc from 'fast-check';
import { DEFAULT_SETTINGS, DomainError, createUseCases, type Actor, type UseCases } from '@svc/core';
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
import { ChaosScheduler } from '@svc/scheduler-chaos';

/** The core's use cases over in-memory fakes, with the scheduler wrapped in chaos. */
async function world(seed: number) {
  const uow = new InMemoryUnitOfWork();
  const inner = new FakeScheduler();
  const chaos = new ChaosScheduler(inner, { rates: {}, seed });
  const tokens = new FakeTokenGenerator();
  const clock = new ManualClock();
  const useCases: UseCases = createUseCases({
    uow,
    scheduler: chaos,
    logs: new InMemoryLogStore(),
    keyParser: new FakePublicKeyParser(),
    certificateParser: new FakeCertificateParser(),
    passwords: new FakePasswordHasher(),
    tokens,
    secrets: new FakeSecretBox(),
    clock,
    timer: clock,
    ids: new SequentialIdGenerator(),
    random: new SeededRandom(),
    settings: DEFAULT_SETTINGS,
  });
  const { id: _id, ...fields } = aUser({ username: 'alice' });
  const user = await uow.repositories.users.create(fields);
  const tokenHash = tokens.hash(tokens.generate());
  await uow.repositories.tokens.add(aToken({ hash: tokenHash, username: 'alice' }));
  const actor: Actor = { user, tokenHash };
  await useCases.createApp.execute(actor, { id: 'myapp' });
  return { uow, inner, chaos, useCases, actor };
}

type World = Awaited<ReturnType<typeof world>>;

/** One API operation that touches the scheduler. */
type Operation =
  | { kind: 'build'; worker: boolean }
  | { kind: 'config'; value: string }
  | { kind: 'scale'; web: number; worker: number }
  | { kind: 'rollback'; version: number | null }
  | { kind: 'run' };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('build' as const), worker: fc.boolean() }),
  fc.record({ kind: fc.constant('config' as const), value: fc.string({ maxLength: 8 }) }),
  fc.record({ kind: fc.constant('scale' as const), web: fc.integer({ min: 0, max: 3 }), worker: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('rollback' as const), version: fc.option(fc.integer({ min: 1, max: 6 })) }),
  fc.record({ kind: fc.constant('run' as const) }),
);

async function apply(w: World, op: Operation): Promise<unknown> {
  const { useCases, actor } = w;
  switch (op.kind) {
    case 'build': {
      const procfile: Record<string, string> = { web: 'serve' };
      if (op.worker) procfile.worker = 'work';
      return useCases.createBuild.execute(actor, 'myapp', { image: 'example/app:v1', procfile });
    }
    case 'config':
      return useCases.setConfig.execute(actor, 'myapp', { values: { FOO: op.value } });
    case 'scale':
      return useCases.scaleApp.execute(actor, 'myapp', { web: op.web, worker: op.worker });
    case 'rollback':
      return useCases.rollback.execute(actor, 'myapp', op.version === null ? {} : { version: op.version });
    case 'run':
      return useCases.runCommand.execute(actor, 'myapp', { command: 'true' });
  }
}

/** Recorded (non-run) containers and the containers the scheduler holds, by id. */
function containerIds(w: World): { recorded: string[]; running: string[] } {
  const recorded = w.uow.snapshot().containers.filter((c) => c.type !== 'run').map((c) => c.uuid).sort();
  const running = w.inner.running().map((c) => c.id).sort();
  return { recorded, running };
}

describe('the core under a chaotic scheduler', () => {
  it('a failed operation answers unavailable (or a 4xx) and changes no row; recorded containers always run', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.constantFrom(0.2, 0.5),
        async (operations, seed, rate) => {
          const w = await world(seed);
          w.chaos.setRates({ create: rate, start: rate, stop: rate / 2, destroy: rate / 2, run: rate, states: rate });
          for (const op of operations) {
            const before = w.uow.snapshot();
            let failure: unknown = null;
            try {
              await apply(w, op);
            } catch (error) {
              failure = error;
            }
            if (failure !== null) {
              // Anything but a domain error would be a 500; a conflict is a rollback to a release without a build.
              expect(DomainError.is(failure)).toBe(true);
              expect(['unavailable', 'invalid', 'not_found', 'conflict']).toContain((failure as DomainError).kind);
              expect(w.uow.snapshot()).toEqual(before);
            }
            const { recorded, running } = containerIds(w);
            // No ghost: every container the API lists is running.
            expect(running).toEqual(expect.arrayContaining(recorded));
            // Orphans only come from stops that failed (before commit: abort; after: logged).
            expect(running.length - recorded.length).toBeLessThanOrEqual(w.chaos.injected.stop);
            const versions = w.uow.snapshot().releases.map((r) => r.version).sort((a, b) => a - b);
            expect(versions).toEqual(versions.map((_, i) => i + 1));
            const latest = versions.length;
            for (const container of w.uow.snapshot().containers) expect(container.release).toBe(latest);
          }
        },
      ),
      { seed: 20261121, numRuns: 60 },
    );
  });

  it('a delete whose stops fail part-way answers unavailable and brings back the containers it had stopped', async () => {
    let partial = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const w = await world(seed);
      await w.useCases.createBuild.execute(w.actor, 'myapp', { image: 'example/app:v1', procfile: { web: 'serve' } });
      await w.useCases.scaleApp.execute(w.actor, 'myapp', { web: 4 });
      const before = containerIds(w);
      w.chaos.setRates({ stop: 0.3, destroy: 0.2 });
      let failure: unknown = null;
      try {
        await w.useCases.deleteApp.execute(w.actor, 'myapp');
      } catch (error) {
        failure = error;
      }
      if (failure === null) continue;
      expect(DomainError.is(failure) && (failure as DomainError).kind).toBe('unavailable');
      if (w.chaos.injected.stop + w.chaos.injected.destroy > 0 && w.inner.stopped().length > 0) partial += 1;
      expect(containerIds(w)).toEqual(before);
    }
    // The seeds above include deletes that had stopped some containers before one failed.
    expect(partial).toBeGreaterThan(0);
  });

  it('without faults the same operations always succeed or fail with a 4xx, and recorded equals running', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 10 }), async (operations) => {
        const w = await world(1);
        for (const op of operations) {
          try {
            await apply(w, op);
          } catch (error) {
            expect(DomainError.is(error) && (error as DomainError).kind !== 'unavailable').toBe(true);
          }
          const { recorded, running } = containerIds(w);
          expect(running).toEqual(recorded);
        }
      }),
      { seed: 7, numRuns: 30 },
    );
  });
});
