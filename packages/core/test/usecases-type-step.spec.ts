import { RequestRejected, type ContainerSpec, type ContainerState, type Scheduler } from '@svc/core';
import { World, rejectionOf } from './support/world';

const PROCFILE = { web: 'node server.js', worker: 'node worker.js' };

/** One call of the whole-type step the scheduler received. */
interface Step {
  containers: string[];
  replacing: string[];
}

/**
 * Gives the world's fake scheduler the optional whole-type step, as a scheduler with a
 * rollout of its own offers it: it starts each new container of the type (through `start`,
 * so that the failures the fake injects apply) and, when one fails, stops those it started
 * before it rejects, leaving the replaced containers as they were, as the port requires.
 */
function offerTypeStep(world: World): Step[] {
  const steps: Step[] = [];
  const scheduler = world.scheduler;
  const rollType: NonNullable<Scheduler['rollType']> = async (specs: ContainerSpec[], replacing: string[]) => {
    steps.push({ containers: specs.map((s) => `${s.type}.${s.num}@v${s.release}`), replacing: [...replacing] });
    const states = new Map<string, ContainerState>();
    try {
      for (const spec of specs) states.set(spec.id, await scheduler.start(spec));
    } catch (error) {
      for (const id of states.keys()) await scheduler.stop(id);
      throw error;
    }
    return states;
  };
  Object.assign(scheduler, { rollType });
  return steps;
}

/** An app with two web and one worker containers of v2, and the fake's calls forgotten. */
async function deployed(world: World): Promise<{ actor: Awaited<ReturnType<World['actor']>>; old: string[] }> {
  const actor = await world.actor('alice');
  await world.deployedApp(actor, 'myapp', PROCFILE);
  await world.useCases.scaleApp.execute(actor, 'myapp', { web: 2, worker: 1 });
  const old = world.scheduler.running().map((c) => c.id);
  world.scheduler.clearCalls();
  return { actor, old };
}

describe('a rollout through the scheduler\'s whole-type step', () => {
  it('starts each process type in one step, telling it which containers it replaces, and stops those only after every type is up', async () => {
    const world = new World();
    const steps = offerTypeStep(world);
    const { actor, old } = await deployed(world);
    const oldByType = (type: string): string[] => world.scheduler.running().filter((c) => c.spec.type === type && old.includes(c.id)).map((c) => c.id);
    const replacedWeb = oldByType('web');
    const replacedWorker = oldByType('worker');

    await world.useCases.setConfig.execute(actor, 'myapp', { values: { A: '1' } });

    expect(steps.slice(-2)).toEqual([
      { containers: ['web.1@v3', 'web.2@v3'], replacing: replacedWeb },
      { containers: ['worker.1@v3'], replacing: replacedWorker },
    ]);
    expect(world.runningContainers()).toEqual(['web.1@v3', 'web.2@v3', 'worker.1@v3']);
    const calls = world.scheduler.calls.filter((c) => c.method === 'start' || c.method === 'stop').map((c) => c.method);
    // Every new container up before the first replaced one stops.
    expect(calls).toEqual(['start', 'start', 'start', 'stop', 'stop', 'stop']);
    expect(world.scheduler.stopped().sort()).toEqual([...old].sort());
    expect(world.uow.snapshot().containers.filter((c) => c.app === 'myapp').every((c) => c.state === 'up')).toBe(true);
  });

  it('a failed step leaves the old containers serving and none of the new: 503 SCHEDULER.FAILED, no release', async () => {
    const world = new World();
    offerTypeStep(world);
    const { actor, old } = await deployed(world);
    world.scheduler.failStartOf((spec) => spec.type === 'worker' && spec.release === 3);

    const error = await rejectionOf(world.useCases.setConfig.execute(actor, 'myapp', { values: { A: '1' } }));

    expect(error).toMatchObject({ kind: 'unavailable', code: 'SCHEDULER.FAILED' });
    expect(error.message).toMatch(/failed to start myapp worker\.1/);
    expect(world.runningContainers()).toEqual(['web.1@v2', 'web.2@v2', 'worker.1@v2']);
    expect(world.scheduler.running().map((c) => c.id).sort()).toEqual([...old].sort());
    // The web step had succeeded: the core stopped its containers, never a replaced one.
    expect(world.scheduler.stopped().filter((id) => old.includes(id))).toEqual([]);
    expect(world.releaseVersions()).toEqual([1, 2]);
    expect(world.recordedContainers()).toEqual(['web.1@v2', 'web.2@v2', 'worker.1@v2']);
  });

  it("a step's invalid error (the request's own fault) is answered as it is, and nothing of the new runs", async () => {
    const world = new World();
    offerTypeStep(world);
    const { actor } = await deployed(world);
    const refused = new RequestRejected('IMAGE.NOT_FOUND', 'no registry has it');
    world.scheduler.failStartOf((spec) => spec.type === 'web' && spec.release === 3, refused);

    const error = await rejectionOf(world.useCases.setConfig.execute(actor, 'myapp', { values: { A: '1' } }));

    expect(error).toBe(refused);
    expect(world.runningContainers()).toEqual(['web.1@v2', 'web.2@v2', 'worker.1@v2']);
  });

  it('a scale-up starts the new containers of a type in one step that replaces nothing', async () => {
    const world = new World();
    const steps = offerTypeStep(world);
    const { actor } = await deployed(world);

    await world.useCases.scaleApp.execute(actor, 'myapp', { web: 3 });

    expect(steps.at(-1)).toEqual({ containers: ['web.3@v2'], replacing: [] });
    expect(world.runningContainers()).toEqual(['web.1@v2', 'web.2@v2', 'web.3@v2', 'worker.1@v2']);
  });
});
