import { createUseCases, NotFound, observeDeploy, Unavailable, ValidationFailed } from '@svc/core';
import { RecordingDeployObserver } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

/** A world whose use cases report deploys to a recording observer. */
async function observedWorld() {
  const world = new World();
  const observer = new RecordingDeployObserver();
  const useCases = createUseCases({ ...world.deps, deployObserver: observer });
  const alice = await world.actor('alice');
  await world.app(alice);
  return { world, observer, useCases, alice };
}

describe('deploy observer', () => {
  it('sees a config change, a build and a rollback each end as succeeded', async () => {
    const { observer, useCases, alice } = await observedWorld();

    await useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });
    await useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1', procfile: { web: 'serve' } });
    await useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'serve' } });
    await useCases.rollback.execute(alice, 'myapp', { version: 3 });

    expect(observer.deploys).toEqual([
      { app: 'myapp', outcome: 'succeeded' },
      { app: 'myapp', outcome: 'succeeded' },
      { app: 'myapp', outcome: 'succeeded' },
      { app: 'myapp', outcome: 'succeeded' },
    ]);
  });

  it('reports a scheduler failure as failed, and the deploy still answers Unavailable', async () => {
    const { world, observer, useCases, alice } = await observedWorld();
    world.scheduler.failStarts(1);

    const error = await rejectionOf(useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1', procfile: { web: 'serve' } }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(observer.deploys).toEqual([{ app: 'myapp', outcome: 'failed' }]);
  });

  it('reports a deploy refused inside the transaction (rollback to an absent release) as rejected', async () => {
    const { observer, useCases, alice } = await observedWorld();

    const error = await rejectionOf(useCases.rollback.execute(alice, 'myapp', { version: 9 }));

    expect(error).toBeInstanceOf(NotFound);
    expect(observer.deploys).toEqual([{ app: 'myapp', outcome: 'rejected' }]);
  });

  it('sees no deploy for a body refused before one begins', async () => {
    const { observer, useCases, alice } = await observedWorld();

    const error = await rejectionOf(useCases.setConfig.execute(alice, 'myapp', { values: { 'bad name': 'x' } }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(observer.deploys).toEqual([]);
  });

  it('does not let an observer that throws change the deploy', async () => {
    const { world, alice } = await observedWorld();
    const throwing = { deployStarted: () => { throw new Error('observer broke'); } };
    const useCases = createUseCases({ ...world.deps, deployObserver: throwing });

    const published = await useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(published.release.version).toBe(2);
  });

  it('observeDeploy reports an unexpected error as failed and rethrows it', async () => {
    const observer = new RecordingDeployObserver();
    const boom = new Error('boom');

    await expect(observeDeploy({ deployObserver: observer }, 'x', Promise.reject(boom))).rejects.toBe(boom);

    expect(observer.deploys).toEqual([{ app: 'x', outcome: 'failed' }]);
  });
});
