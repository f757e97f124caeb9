import { NoBuild, NotFound, RequestRejected, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor } from '@svc/core';
import { PAGE } from './support/fixtures';
import { World, rejectionOf } from './support/world';

const PROCFILE = { web: 'node server.js', worker: 'node worker.js' };

/** alice with myapp deployed from PROCFILE (web.1 on v2). */
async function deployed(settings = {}): Promise<{ world: World; alice: Actor }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.deployedApp(alice, 'myapp', PROCFILE);
  return { world, alice };
}

describe('ScaleApp', () => {
  it('on an app without a build: NoBuild "No build associated with this release", nothing changes', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { web: 1 }));

    expect(error).toBeInstanceOf(NoBuild);
    expect(error.message).toBe('No build associated with this release');
    expect(error.kind).toBe('invalid');
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.scheduler.calls).toEqual([]);
  });

  it('starts the missing containers on the current release and records the structure', async () => {
    const { world, alice } = await deployed();

    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 3, worker: 2 });

    expect(world.recordedContainers()).toEqual(['web.1@v2', 'web.2@v2', 'web.3@v2', 'worker.1@v2', 'worker.2@v2']);
    expect(world.runningContainers()).toEqual(world.recordedContainers());
    expect(world.uow.snapshot().apps[0]?.structure).toEqual({ web: 3, worker: 2 });
    expect(world.scheduler.started().find((s) => s.type === 'worker')).toMatchObject({
      command: 'node worker.js',
      env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2' },
    });
  });

  it('accepts numeric strings as counts', async () => {
    const { world, alice } = await deployed();

    await world.useCases.scaleApp.execute(alice, 'myapp', { web: '2' });

    expect(world.recordedContainers()).toEqual(['web.1@v2', 'web.2@v2']);
  });

  it('removes the highest numbers first when scaling down, stopping them after the change', async () => {
    const { world, alice } = await deployed();
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 4 });
    const uuidOf = (num: number) => world.uow.snapshot().containers.find((c) => c.num === num)?.uuid;
    const [three, four] = [uuidOf(3), uuidOf(4)];
    world.scheduler.clearCalls();

    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2 });

    expect(world.recordedContainers()).toEqual(['web.1@v2', 'web.2@v2']);
    expect(world.scheduler.stopped()).toEqual([four, three]);
    expect(world.scheduler.started()).toEqual([]);
  });

  it('scales a type to zero', async () => {
    const { world, alice } = await deployed();

    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 0 });

    expect(world.recordedContainers()).toEqual([]);
    expect(world.runningContainers()).toEqual([]);
    expect(world.uow.snapshot().apps[0]?.structure).toEqual({ web: 0 });
  });

  it('reuses the lowest free numbers when scaling up again', async () => {
    const { world, alice } = await deployed();
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 3 });
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 1 });

    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2 });

    expect(world.recordedContainers()).toEqual(['web.1@v2', 'web.2@v2']);
  });

  it('leaves the counts it was not given alone', async () => {
    const { world, alice } = await deployed();
    await world.useCases.scaleApp.execute(alice, 'myapp', { worker: 1 });

    expect(world.uow.snapshot().apps[0]?.structure).toEqual({ web: 1, worker: 1 });
    expect(world.recordedContainers()).toEqual(['web.1@v2', 'worker.1@v2']);
  });

  it('accepts cmd for any build, running the image command', async () => {
    const { world, alice } = await deployed();

    await world.useCases.scaleApp.execute(alice, 'myapp', { cmd: 1 });

    expect(world.scheduler.started().at(-1)).toMatchObject({ type: 'cmd', command: null });
  });

  it('refuses a type the build does not have, naming it', async () => {
    const { world, alice } = await deployed();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, clock: 1 }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ clock: ['Container type clock does not exist in application'] });
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('follows SCALE_MAX_PER_TYPE: the maximum is accepted, one more is refused', async () => {
    const { world, alice } = await deployed({ scaleMaxPerType: 3 });

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { web: 4 }));
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 3 });

    expect(error.fields).toEqual({ web: ['Must be an integer from 0 to 3.'] });
    expect(world.recordedContainers()).toHaveLength(3);
  });

  it.each([[-1], [101], [1.5], ['two'], [null], [true]])('refuses the count %p with the default bounds 0..100', async (count) => {
    const { world, alice } = await deployed();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { web: count }));

    expect(error.fields).toEqual({ web: ['Must be an integer from 0 to 100.'] });
  });

  it('refuses an invalid process type name', async () => {
    const { world, alice } = await deployed();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { 'Web!': 1 }));

    expect(error.fields).toEqual({ 'Web!': ['Process types can only contain [a-z0-9-_].'] });
  });

  it.each([[{}], [[]], ['web=2'], [null]])('refuses the body %p that names no type', async (body) => {
    const { world, alice } = await deployed();

    expect(await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', body))).toBeInstanceOf(RequestRejected);
  });

  it('when the scheduler fails: Unavailable, nothing changes and what it started is stopped', async () => {
    const { world, alice } = await deployed();
    await world.useCases.scaleApp.execute(alice, 'myapp', { worker: 2 });
    const before = world.uow.snapshot();
    const running = world.runningContainers();
    world.scheduler.failStartOf((spec) => spec.type === 'web' && spec.num === 3);

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { worker: 0, web: 3 }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(running);
  });

  it('writes the scale to the app log', async () => {
    const { world, alice } = await deployed();

    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, worker: 1 });

    expect(world.logs.messages('myapp').at(-1)).toBe('alice scaled containers web=2 worker=1');
  });
});

describe('RestartContainers', () => {
  async function scaled(): Promise<{ world: World; alice: Actor }> {
    const { world, alice } = await deployed();
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, worker: 1 });
    world.scheduler.clearCalls();
    world.clock.advanceSeconds(60);
    return { world, alice };
  }

  it('restarts every container of the app in place and returns them', async () => {
    const { world, alice } = await scaled();
    const uuids = world.uow.snapshot().containers.map((c) => c.uuid);

    const restarted = await world.useCases.restartContainers.execute(alice, 'myapp', {});

    expect(restarted.map((c) => `${c.type}.${c.num}`).sort()).toEqual(['web.1', 'web.2', 'worker.1']);
    expect(restarted.every((c) => c.state === 'up' && c.updated.getTime() === world.clock.now().getTime())).toBe(true);
    expect(world.scheduler.stopped().sort()).toEqual([...uuids].sort());
    expect(world.scheduler.started().map((s) => s.id).sort()).toEqual([...uuids].sort());
    expect(world.logs.messages('myapp').at(-1)).toBe('alice restarted all containers');
  });

  it('restarts only the containers of one type', async () => {
    const { world, alice } = await scaled();

    const restarted = await world.useCases.restartContainers.execute(alice, 'myapp', { type: 'web' });

    expect(restarted.map((c) => `${c.type}.${c.num}`)).toEqual(['web.1', 'web.2']);
    expect(world.scheduler.started().map((s) => s.type)).toEqual(['web', 'web']);
    expect(world.logs.messages('myapp').at(-1)).toBe('alice restarted web containers');
  });

  it('restarts one container by type and number', async () => {
    const { world, alice } = await scaled();

    const restarted = await world.useCases.restartContainers.execute(alice, 'myapp', { type: 'web', num: 2 });

    expect(restarted.map((c) => `${c.type}.${c.num}`)).toEqual(['web.2']);
    expect(world.logs.messages('myapp').at(-1)).toBe('alice restarted web.2');
  });

  it('answers NotFound for a container number that does not exist', async () => {
    const { world, alice } = await scaled();

    expect(await rejectionOf(world.useCases.restartContainers.execute(alice, 'myapp', { type: 'web', num: 9 }))).toBeInstanceOf(NotFound);
    expect(world.scheduler.calls).toEqual([]);
  });

  it('returns an empty list, and logs nothing, when no container matches', async () => {
    const { world, alice } = await scaled();
    const logged = world.logs.messages('myapp').length;

    expect(await world.useCases.restartContainers.execute(alice, 'myapp', { type: 'clock' })).toEqual([]);
    expect(world.logs.messages('myapp')).toHaveLength(logged);
  });

  it('when the scheduler fails: Unavailable and the recorded containers are unchanged', async () => {
    const { world, alice } = await scaled();
    const before = world.uow.snapshot();
    world.scheduler.failStarts(1);

    expect(await rejectionOf(world.useCases.restartContainers.execute(alice, 'myapp', {}))).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot()).toEqual(before);
  });
});

describe('RunCommand', () => {
  it('on an app without a build: NoBuild, and the scheduler is not asked', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);

    expect(await rejectionOf(world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' }))).toBeInstanceOf(NoBuild);
    expect(world.scheduler.runs()).toEqual([]);
  });

  it('returns the scheduler\'s exit code and output as they are', async () => {
    const { world, alice } = await deployed();
    world.scheduler.setRunResult({ exitCode: 3, output: 'line 1\nline 2\n' });

    expect(await world.useCases.runCommand.execute(alice, 'myapp', { command: 'false' })).toEqual({ exitCode: 3, output: 'line 1\nline 2\n' });
  });

  it('runs the command on the current release with its environment and the configured limits', async () => {
    const { world, alice } = await deployed({ runTimeoutSeconds: 30, runOutputLimitBytes: 2048 });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { DATABASE_URL: 'postgres://db' } });

    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'rake db:migrate' });

    expect(world.scheduler.runs()).toEqual([
      {
        app: 'myapp',
        release: 3,
        image: 'example/myapp:v1',
        workdir: null,
        command: 'rake db:migrate',
        env: { DATABASE_URL: 'postgres://db', SVC_APP: 'myapp', SVC_RELEASE: 'v3' },
        timeoutSeconds: 30,
        outputLimitBytes: 2048,
      },
    ]);
  });

  it('records a run container while the command runs and removes it afterwards', async () => {
    const { world, alice } = await deployed();
    let during: string[] = [];
    world.scheduler.setRunResult(() => {
      during = world.recordedContainers();
      return { exitCode: 0, output: '' };
    });

    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' });

    expect(during).toEqual(['run.1@v2', 'web.1@v2']);
    expect(world.recordedContainers()).toEqual(['web.1@v2']);
  });

  it('when the scheduler fails: Unavailable, and the run container is removed', async () => {
    const { world, alice } = await deployed();
    world.scheduler.failRuns(1);

    const error = await rejectionOf(world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.message).toBe('The scheduler failed to run the command: Scheduler run failed (injected)');
    expect(world.recordedContainers()).toEqual(['web.1@v2']);
  });

  it.each<[unknown, string]>([
    [{}, 'This field is required.'],
    [{ command: '' }, 'This field may not be blank.'],
    [{ command: '   ' }, 'This field may not be blank.'],
    [{ command: 5 }, 'Not a valid string.'],
  ])('refuses the body %j on field command', async (body, message) => {
    const { world, alice } = await deployed();

    expect((await rejectionOf(world.useCases.runCommand.execute(alice, 'myapp', body))).fields).toEqual({ command: [message] });
    expect(world.scheduler.runs()).toEqual([]);
  });

  it('writes the run to the app log', async () => {
    const { world, alice } = await deployed();

    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls -la' });

    expect(world.logs.messages('myapp').at(-1)).toBe("alice runs 'ls -la'");
  });
});

describe('ListContainers', () => {
  it('lists containers oldest first, filtered by type on request', async () => {
    const { world, alice } = await deployed();
    world.clock.advanceSeconds(1);
    await world.useCases.scaleApp.execute(alice, 'myapp', { worker: 1, web: 2 });

    const all = await world.useCases.listContainers.execute(alice, 'myapp', undefined, PAGE);
    const workers = await world.useCases.listContainers.execute(alice, 'myapp', 'worker', PAGE);

    expect(all.items.map((c) => `${c.type}.${c.num}`)).toEqual(['web.1', 'web.2', 'worker.1']);
    expect(all.count).toBe(3);
    expect(workers.items.map((c) => `${c.type}.${c.num}`)).toEqual(['worker.1']);
  });

  it('lists run containers only when asked for by type', async () => {
    const { world, alice } = await deployed();
    let listed: { all: string[]; runs: string[] } | null = null;
    const originalRun = world.scheduler.run.bind(world.scheduler);
    world.scheduler.run = async (spec) => {
      const all = await world.useCases.listContainers.execute(alice, 'myapp', undefined, PAGE);
      const runs = await world.useCases.listContainers.execute(alice, 'myapp', 'run', PAGE);
      listed = { all: all.items.map((c) => c.type), runs: runs.items.map((c) => c.type) };
      return originalRun(spec);
    };

    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' });

    expect(listed).toEqual({ all: ['web'], runs: ['run'] });
  });

  it('shows the scheduler\'s live state', async () => {
    const { world, alice } = await deployed();
    const [container] = world.uow.snapshot().containers;
    world.scheduler.setState(container!.uuid, 'crashed');

    const page = await world.useCases.listContainers.execute(alice, 'myapp', undefined, PAGE);

    expect(page.items.map((c) => c.state)).toEqual(['crashed']);
  });

  it('answers NotFound for a page past the end', async () => {
    const { world, alice } = await deployed();

    expect(await rejectionOf(world.useCases.listContainers.execute(alice, 'myapp', undefined, { page: 2, pageSize: 1 }))).toBeInstanceOf(
      NotFound,
    );
  });
});
