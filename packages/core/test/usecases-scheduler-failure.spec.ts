import { RequestRejected, Unavailable, failureReason, restartStopped, schedulerFailure, schedulerUnavailable } from '@svc/core';
import { World } from './support/world';

describe('scheduler failure policy', () => {
  it('failureReason gives the error message, or "unknown error" for anything without one', () => {
    expect(failureReason(new Error('engine down'))).toBe('engine down');
    expect(failureReason(new Error(''))).toBe('unknown error');
    expect(failureReason('a string')).toBe('unknown error');
    expect(failureReason(undefined)).toBe('unknown error');
  });

  it('schedulerUnavailable is a 503 SCHEDULER.FAILED saying what failed, and why when told', () => {
    const withReason = schedulerUnavailable('stop myapp web.1', new Error('engine down'));
    const withoutReason = schedulerUnavailable('clean up an interrupted deploy of myapp');

    expect(withReason).toBeInstanceOf(Unavailable);
    expect(withReason).toMatchObject({ code: 'SCHEDULER.FAILED', kind: 'unavailable', message: 'The scheduler failed to stop myapp web.1: engine down' });
    expect(withoutReason).toMatchObject({ code: 'SCHEDULER.FAILED', message: 'The scheduler failed to clean up an interrupted deploy of myapp.' });
    expect(schedulerUnavailable('restart myapp web.1', new RequestRejected('IMAGE.NOT_FOUND', 'no such image'))).toMatchObject({
      code: 'SCHEDULER.FAILED',
      message: 'The scheduler failed to restart myapp web.1: no such image',
    });
  });

  it('schedulerFailure answers the request\'s own fault as it is and anything else with a 503', () => {
    const invalid = new RequestRejected('IMAGE.NOT_FOUND', 'no such image');

    expect(schedulerFailure('start myapp web.1', invalid)).toBe(invalid);
    expect(schedulerFailure('start myapp web.1', new Error('no capacity'))).toMatchObject({
      code: 'SCHEDULER.FAILED',
      message: 'The scheduler failed to start myapp web.1: no capacity',
    });
  });
});

describe('restartStopped', () => {
  async function scaled(): Promise<World> {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp');
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 3 });
    return world;
  }

  it('starts again, with their own ids and release, the containers the scheduler no longer runs, and leaves the others alone', async () => {
    const world = await scaled();
    const [first, second, third] = world.uow.snapshot().containers.filter((c) => c.app === 'myapp');
    await world.scheduler.stop(first!.uuid);
    await world.scheduler.stop(second!.uuid);
    const app = (await world.uow.repositories.apps.findById('myapp'))!;
    world.scheduler.clearCalls();

    await restartStopped(world.scheduler, world.uow.repositories, app, [first!, second!, third!]);

    expect(world.scheduler.started().map((s) => [s.id, s.release]).sort()).toEqual([[first!.uuid, first!.release], [second!.uuid, second!.release]].sort());
    expect(world.runningContainers('myapp')).toEqual(['web.1@v2', 'web.2@v2', 'web.3@v2']);
  });

  it('never starts one-off runs, and never throws when the scheduler fails again', async () => {
    const world = await scaled();
    const [first, second] = world.uow.snapshot().containers.filter((c) => c.app === 'myapp');
    await world.scheduler.stop(first!.uuid);
    await world.scheduler.stop(second!.uuid);
    const app = (await world.uow.repositories.apps.findById('myapp'))!;
    world.scheduler.clearCalls();
    world.scheduler.failStarts(1);

    await expect(restartStopped(world.scheduler, world.uow.repositories, app, [{ ...first!, type: 'run' }, second!])).resolves.toBeUndefined();

    expect(world.scheduler.calls.filter((c) => c.method === 'start')).toHaveLength(1);
    expect(world.runningContainers('myapp')).toEqual(['web.3@v2']);
  });
});
