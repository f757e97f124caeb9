import { BUILD_READINESS_TTL_MS, CheckBuilds, type ImageBuilder, type SourceFiles } from '@svc/core';
import { FakeBuildpackCatalog, FakeImageBuilder, FakeSourceCompiler, ManualClock } from '@svc/core/testing';

const NO_DOCKERFILE: SourceFiles = { procfile: 'web: ./serve', dockerfile: null };
const WITH_DOCKERFILE: SourceFiles = { procfile: null, dockerfile: 'FROM scratch\n' };

interface Setup {
  check: CheckBuilds;
  clock: ManualClock;
  compiler: FakeSourceCompiler;
  images: FakeImageBuilder;
}

function setup(options: { compiler?: boolean; buildpacks?: boolean; images?: boolean } = {}): Setup {
  const clock = new ManualClock();
  const compiler = new FakeSourceCompiler();
  const images = new FakeImageBuilder();
  const check = new CheckBuilds({
    clock,
    compiler: options.compiler === false ? null : compiler,
    buildpacks: options.buildpacks === false ? null : new FakeBuildpackCatalog(),
    images: options.images === true ? images : null,
  });
  return { check, clock, compiler, images };
}

describe('CheckBuilds', () => {
  it('answers nothing when every builder can build', async () => {
    const s = setup({ images: true });

    expect(await s.check.execute()).toEqual([]);
    expect([s.compiler.readinessChecks, s.images.readinessChecks]).toEqual([1, 1]);
  });

  it('gives each builder\'s reason once, for the probe, without repeating a sentence two builders share', async () => {
    const s = setup({ images: true });
    s.compiler.cannotRun('buildpack builds cannot run: no stack image');
    s.images.cannotRun('the engine does not answer');

    expect(await s.check.execute()).toEqual(['buildpack builds cannot run: no stack image', 'the engine does not answer']);

    s.clock.advance(BUILD_READINESS_TTL_MS);
    s.images.cannotRun('buildpack builds cannot run: no stack image');
    expect(await s.check.execute()).toEqual(['buildpack builds cannot run: no stack image']);
  });

  it('asks nothing of a compiler without a buildpack catalog, nor of builders not configured', async () => {
    const s = setup({ buildpacks: false });
    s.compiler.cannotRun('no sandbox');

    expect(await s.check.execute()).toEqual([]);
    expect(await s.check.execute(NO_DOCKERFILE)).toEqual([]);
    expect(s.compiler.readinessChecks).toBe(0);
  });

  it('keeps an answer for the TTL, then asks again: a machine fixed meanwhile becomes ready', async () => {
    const s = setup();
    s.compiler.cannotRun('the build network cannot be guarded');
    expect(await s.check.execute()).toEqual(['the build network cannot be guarded']);

    s.compiler.cannotRun(null);
    s.clock.advance(BUILD_READINESS_TTL_MS - 1);
    expect(await s.check.execute()).toEqual(['the build network cannot be guarded']);
    expect(s.compiler.readinessChecks).toBe(1);

    s.clock.advance(1);
    expect(await s.check.execute()).toEqual([]);
    expect(s.compiler.readinessChecks).toBe(2);
  });

  it('asks a builder one question at a time, however many callers wait', async () => {
    const s = setup();
    s.compiler.cannotRun('no sandbox');

    const answers = await Promise.all([s.check.execute(), s.check.execute(), s.check.execute(NO_DOCKERFILE)]);

    expect(answers).toEqual([['no sandbox'], ['no sandbox'], ['no sandbox']]);
    expect(s.compiler.readinessChecks).toBe(1);
  });

  it('asks, for a push, only the builder its commit needs: buildpacks without a Dockerfile, the image builder with one', async () => {
    const s = setup({ images: true });
    s.compiler.cannotRun('buildpack builds cannot run: no stack image');

    expect(await s.check.execute(WITH_DOCKERFILE)).toEqual([]);
    expect(await s.check.execute(NO_DOCKERFILE)).toEqual(['buildpack builds cannot run: no stack image']);
    expect([s.compiler.readinessChecks, s.images.readinessChecks]).toEqual([1, 1]);
  });

  it('asks again at once for a push when the kept answer was a reason, and keeps a ready answer', async () => {
    const s = setup();
    s.compiler.cannotRun('no sandbox');
    expect(await s.check.execute()).toEqual(['no sandbox']);

    s.compiler.cannotRun(null);
    expect(await s.check.execute(NO_DOCKERFILE)).toEqual([]);
    expect(await s.check.execute(NO_DOCKERFILE)).toEqual([]);

    expect(s.compiler.readinessChecks).toBe(2);
  });

  it('takes a check that throws as the reason, never throwing itself', async () => {
    const s = setup();
    s.compiler.whyBuildsCannotRun = () => Promise.reject(new Error('connect ENOENT /var/run/docker.sock'));

    expect(await s.check.execute()).toEqual(['builds cannot be checked: connect ENOENT /var/run/docker.sock']);
  });

  it('takes a builder without the check as ready', async () => {
    const plain: ImageBuilder = { build: async () => 'sha256:1', tag: async () => undefined, remove: async () => undefined, prune: async () => [] };
    const check = new CheckBuilds({ clock: new ManualClock(), compiler: null, buildpacks: null, images: plain });

    expect(await check.execute()).toEqual([]);
    expect(await check.execute(WITH_DOCKERFILE)).toEqual([]);
  });
});
