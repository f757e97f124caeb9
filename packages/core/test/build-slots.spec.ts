import { BuildSlots, InMemoryBuildSlotStore, TooMany, type ImageBuildRequest, type Timer } from '@svc/core';
import { FakeImageBuilder, ManualClock, SequentialIdGenerator, describeBuildSlotStoreContract, fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

/** A builder whose builds wait until the test lets them finish. */
class HeldImageBuilder extends FakeImageBuilder {
  readonly waiting: Array<() => void> = [];

  override async build(request: ImageBuildRequest, output: (line: string) => void): Promise<string> {
    await new Promise<void>((done) => this.waiting.push(done));
    return super.build(request, output);
  }
}

const sha = (digit: number): string => String(digit).repeat(40);
const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 100 && !check(); i += 1) await new Promise((done) => setImmediate(done));
};

describe('BuildSlots', () => {
  /** A controller whose timers never fire: it stopped renewing what it holds (stalled, or gone). */
  const stalled: Timer = { sleep: () => new Promise<void>(() => undefined), every: () => () => undefined };
  const slotsOf = (store = new InMemoryBuildSlotStore(), clock = new ManualClock(), timer: Timer = clock) => ({
    store,
    clock,
    slots: new BuildSlots(store, clock, timer, new SequentialIdGenerator(), { ttlMs: 30_000 }),
  });

  it('holds at most the limit per user, gives a slot back once, and counts users apart', async () => {
    const { store, slots } = slotsOf();
    const first = await slots.take('alice', 2);
    await slots.take('alice', 2);
    await expect(slots.take('alice', 2)).rejects.toThrow(TooMany);
    await slots.take('bob', 2);
    await first();
    await first();
    expect(store.of('alice')).toBe(1);
    await expect(slots.take('alice', 2)).resolves.toBeInstanceOf(Function);
  });

  it('takes over the slots of a build whose controller stopped renewing them', async () => {
    const store = new InMemoryBuildSlotStore();
    const clock = new ManualClock();
    await slotsOf(store, clock, stalled).slots.take('alice', 1);
    const { slots } = slotsOf(store, clock);
    await expect(slots.take('alice', 1)).rejects.toThrow(/already run 1 builds/);
    // Nothing renews it (its controller's timers stopped): past its expiry, the slot no longer counts.
    clock.advance(30_001);
    await expect(slots.take('alice', 1)).resolves.toBeInstanceOf(Function);
  });

  it('renews a held slot while its build runs', async () => {
    const { store, clock, slots } = slotsOf();
    const release = await slots.take('alice', 1);
    for (let i = 0; i < 6; i += 1) {
      clock.advance(10_000);
      await Promise.resolve();
    }
    // A minute on, the slot held by the running build still counts.
    await expect(slots.take('alice', 1)).rejects.toThrow(TooMany);
    await release();
    expect(store.of('alice')).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });
});

describeBuildSlotStoreContract('InMemoryBuildSlotStore', async () => ({ store: new InMemoryBuildSlotStore() }));

describe('DeploySource: builds at once per user', () => {
  it('refuses the third of three builds sent together with a quota of 2 (429, BUILD.TOO_MANY), and takes one again when a build ends', async () => {
    const images = new HeldImageBuilder();
    const world = new World({ buildsPerUser: 2 }, images);
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
    const key = fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string);
    const push = (digit: number) =>
      world.useCases.deploySource.execute(key, 'myapp', { sha: sha(digit), procfile: 'web: node server.js', dockerfile: 'FROM busybox\n', workdir: `/data/${digit}` });

    const first = push(1);
    const second = push(2);
    await until(() => images.waiting.length === 2);
    const third = await rejectionOf(push(3));

    expect(third).toBeInstanceOf(TooMany);
    expect(third.code).toBe('BUILD.TOO_MANY');
    expect(third.kind).toBe('throttled');
    expect(images.requests).toHaveLength(0);
    // One at a time: each release prunes the app's images not yet named.
    images.waiting.shift()?.();
    await first;
    images.waiting.shift()?.();
    await second;
    const fourth = push(4);
    await until(() => images.waiting.length === 1);
    images.waiting.splice(0).forEach((go) => go());
    await expect(fourth).resolves.toMatchObject({ build: { sha: sha(4) } });
  });
});
