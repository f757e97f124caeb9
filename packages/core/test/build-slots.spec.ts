import { BuildSlots, TooMany, type ImageBuildRequest } from '@svc/core';
import { FakeImageBuilder, fakeFingerprint, fakePublicKey } from '@svc/core/testing';
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
  it('holds at most the limit per user, gives a slot back once, and counts users apart', () => {
    const slots = new BuildSlots();
    const first = slots.take('alice', 2);
    slots.take('alice', 2);
    expect(() => slots.take('alice', 2)).toThrow(TooMany);
    slots.take('bob', 2);
    first();
    first();
    expect(slots.of('alice')).toBe(1);
    expect(() => slots.take('alice', 2)).not.toThrow();
  });
});

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
