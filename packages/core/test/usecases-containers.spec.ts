import { AppNotVisible, NoBuild, NotFound, RequestRejected, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor, LogEntry } from '@svc/core';
import { FAKE_NOW } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };
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

describe('GetLogs', () => {
  function entries(count: number): LogEntry[] {
    return Array.from({ length: count }, (_, i) => ({
      time: new Date(Date.parse(FAKE_NOW) + i * 1000),
      source: 'myapp[web.1]',
      message: `line ${i + 1}`,
    }));
  }

  async function withLines(count: number): Promise<{ world: World; alice: Actor }> {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.logs.remove('myapp');
    await world.logs.append('myapp', entries(count));
    return { world, alice };
  }

  it('formats each line as "<timestamp> <source>: <message>"', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    world.clock.advanceSeconds(1);
    await world.logs.append('myapp', [{ time: world.clock.now(), source: 'myapp[web.1]', message: 'listening on 5000' }]);

    expect(await world.useCases.getLogs.execute(alice, 'myapp', undefined)).toEqual([
      '2026-11-21T10:00:00UTC svc[api]: alice created initial release',
      '2026-11-21T10:00:01UTC myapp[web.1]: listening on 5000',
    ]);
  });

  it('returns the last 100 lines by default, oldest first', async () => {
    const { world, alice } = await withLines(150);

    const lines = await world.useCases.getLogs.execute(alice, 'myapp', undefined);

    expect(lines).toHaveLength(100);
    expect(lines[0]).toMatch(/: line 51$/);
    expect(lines[99]).toMatch(/: line 150$/);
  });

  it.each([['5'], [5]])('returns the last log_lines=%p lines', async (logLines) => {
    const { world, alice } = await withLines(20);

    const lines = await world.useCases.getLogs.execute(alice, 'myapp', logLines);

    expect(lines.map((l) => l.split(': ')[1])).toEqual(['line 16', 'line 17', 'line 18', 'line 19', 'line 20']);
  });

  it('returns at most 10000 lines, however many are asked for', async () => {
    const { world, alice } = await withLines(10005);

    expect(await world.useCases.getLogs.execute(alice, 'myapp', '10000')).toHaveLength(10000);
    expect(await world.useCases.getLogs.execute(alice, 'myapp', '50000')).toHaveLength(10000);
  });

  it.each([['0'], ['-1'], ['abc'], ['1.5'], [''], [0]])('refuses log_lines=%p on field log_lines', async (logLines) => {
    const { world, alice } = await withLines(3);

    const error = await rejectionOf(world.useCases.getLogs.execute(alice, 'myapp', logLines));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ log_lines: ['A valid positive integer is required.'] });
  });

  it('contains the controller events of create, release, scale, run, domain, perms and transfer', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.actor('bob');
    await world.deployedApp(alice, 'myapp', { web: 'w' });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2 });
    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' });
    await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'www.example.com' });
    await world.useCases.removeDomain.execute(alice, 'myapp', 'www.example.com');
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.useCases.revokePermission.execute(alice, 'myapp', 'bob');
    await world.useCases.updateApp.execute(alice, 'myapp', { owner: 'bob' });

    expect(world.logs.entries('myapp').map((e) => `${e.source}: ${e.message}`)).toEqual([
      'svc[api]: alice created initial release',
      'svc[api]: alice deployed example/myapp:v1',
      'svc[api]: alice added FOO',
      'svc[api]: alice scaled containers web=2',
      "svc[api]: alice runs 'ls'",
      'svc[api]: alice added domain www.example.com',
      'svc[api]: alice removed domain www.example.com',
      'svc[api]: alice added bob to myapp collaborators',
      'svc[api]: alice removed bob from myapp collaborators',
      'svc[api]: alice transferred myapp from alice to bob',
    ]);
  });

  it('an operation still succeeds when the log store fails', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    world.logs.append = async () => {
      throw new Error('disk full');
    };

    await expect(world.app(alice)).resolves.toMatchObject({ id: 'myapp' });
    expect(world.releaseVersions()).toEqual([1]);
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

describe('FollowLogs', () => {
  const at = (second: number): Date => new Date(Date.parse(FAKE_NOW) + second * 1000);
  const line = (second: number, message: string, source = 'myapp[web.1]'): LogEntry => ({ time: at(second), source, message });

  async function withLines(count: number): Promise<{ world: World; alice: Actor }> {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.logs.remove('myapp');
    await world.logs.append('myapp', Array.from({ length: count }, (_, i) => line(i + 1, `line ${i + 1}`)));
    return { world, alice };
  }

  it('returns the last lines, then hands every later line to the listener, formatted as GetLogs does', async () => {
    const { world, alice } = await withLines(5);
    const heard: string[][] = [];

    const followed = await world.useCases.followLogs.execute(alice, 'myapp', '2', (lines) => heard.push(lines));
    await world.logs.append('myapp', [line(10, 'listening on 5000'), line(11, 'ready', 'svc[api]')]);
    await world.logs.append('myapp', [line(12, 'GET /')]);

    expect(followed.lines).toEqual(['2026-11-21T10:00:04UTC myapp[web.1]: line 4', '2026-11-21T10:00:05UTC myapp[web.1]: line 5']);
    expect(heard).toEqual([
      ['2026-11-21T10:00:10UTC myapp[web.1]: listening on 5000', '2026-11-21T10:00:11UTC svc[api]: ready'],
      ['2026-11-21T10:00:12UTC myapp[web.1]: GET /'],
    ]);
    followed.unsubscribe();
  });

  it('returns the last 100 lines by default and caps log_lines at 10000', async () => {
    const { world, alice } = await withLines(10005);

    const byDefault = await world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined);
    const capped = await world.useCases.followLogs.execute(alice, 'myapp', '50000', () => undefined);

    expect(byDefault.lines).toHaveLength(100);
    expect(byDefault.lines[99]).toMatch(/: line 10005$/);
    expect(capped.lines).toHaveLength(10000);
    byDefault.unsubscribe();
    capped.unsubscribe();
  });

  it('after unsubscribe the listener hears nothing more and the store keeps no listener', async () => {
    const { world, alice } = await withLines(1);
    const heard: string[] = [];
    const followed = await world.useCases.followLogs.execute(alice, 'myapp', undefined, (lines) => heard.push(...lines));
    expect(world.logs.listenerCount('myapp')).toBe(1);
    // Heard while subscribed: what follows proves the silence comes from unsubscribing.
    await world.logs.append('myapp', [line(8, 'in time')]);
    expect(heard).toEqual([expect.stringMatching(/in time$/)]);

    followed.unsubscribe();
    followed.unsubscribe();
    await world.logs.append('myapp', [line(9, 'too late')]);

    expect(heard).toEqual([expect.stringMatching(/in time$/)]);
    expect(world.logs.listenerCount('myapp')).toBe(0);
  });

  it.each([['0'], ['abc'], ['-2']])('refuses log_lines=%p on field log_lines without subscribing', async (logLines) => {
    const { world, alice } = await withLines(1);

    const error = await rejectionOf(world.useCases.followLogs.execute(alice, 'myapp', logLines, () => undefined));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ log_lines: ['A valid positive integer is required.'] });
    expect(world.logs.listenerCount('myapp')).toBe(0);
  });

  it('a stranger gets AppNotVisible, and an unknown app NotFound, without subscribing', async () => {
    const { world } = await withLines(1);
    const bob = await world.actor('bob');

    expect(await rejectionOf(world.useCases.followLogs.execute(bob, 'myapp', undefined, () => undefined))).toBeInstanceOf(AppNotVisible);
    expect(await rejectionOf(world.useCases.followLogs.execute(bob, 'nope', undefined, () => undefined))).toBeInstanceOf(NotFound);
    expect(world.logs.listenerCount('myapp')).toBe(0);
  });

  it('a collaborator and an administrator may follow the log', async () => {
    const { world, alice } = await withLines(1);
    const carol = await world.actor('carol');
    const root = await world.actor('root', { admin: true });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });

    const byCarol = await world.useCases.followLogs.execute(carol, 'myapp', undefined, () => undefined);
    const byRoot = await world.useCases.followLogs.execute(root, 'myapp', undefined, () => undefined);

    expect(byCarol.lines.at(-1)).toMatch(/added carol to myapp collaborators$/);
    expect(byRoot.lines).toEqual(byCarol.lines);
    byCarol.unsubscribe();
    byRoot.unsubscribe();
  });

  it('a line appended while the tail is read is returned with the lines, once, and not handed to the listener', async () => {
    const { world, alice } = await withLines(2);
    const tail = world.logs.tail.bind(world.logs);
    world.logs.tail = async (app, count) => {
      await world.logs.append(app, [line(3, 'raced')]);
      return tail(app, count);
    };
    const heard: string[] = [];

    const followed = await world.useCases.followLogs.execute(alice, 'myapp', undefined, (lines) => heard.push(...lines));
    await world.logs.append('myapp', [line(4, 'after')]);

    expect(followed.lines.map((l) => l.split(': ')[1])).toEqual(['line 1', 'line 2', 'raced']);
    expect(heard).toEqual(['2026-11-21T10:00:04UTC myapp[web.1]: after']);
    followed.unsubscribe();
  });

  it('drops what a shared store delivers again from the end of the tail, then passes everything new', async () => {
    const { world, alice } = await withLines(4);
    let deliver: ((entries: LogEntry[]) => void) | undefined;
    world.logs.subscribe = (_app, listener) => {
      deliver = listener;
      return () => undefined;
    };
    const heard: string[] = [];
    const followed = await world.useCases.followLogs.execute(alice, 'myapp', '3', (lines) => heard.push(...lines.map((l) => l.split(': ')[1] ?? '')));

    // A poll that started before the tail was read repeats its last two lines, then goes on.
    deliver?.([line(3, 'line 3')]);
    deliver?.([line(4, 'line 4'), line(5, 'line 5')]);
    deliver?.([line(4, 'line 4')]);

    expect(followed.lines.map((l) => l.split(': ')[1])).toEqual(['line 2', 'line 3', 'line 4']);
    expect(heard).toEqual(['line 5', 'line 4']);
  });

  it('passes a first delivery that is not in the tail whole', async () => {
    const { world, alice } = await withLines(3);
    let deliver: ((entries: LogEntry[]) => void) | undefined;
    world.logs.subscribe = (_app, listener) => {
      deliver = listener;
      return () => undefined;
    };
    const heard: string[] = [];
    await world.useCases.followLogs.execute(alice, 'myapp', undefined, (lines) => heard.push(...lines.map((l) => l.split(': ')[1] ?? '')));

    deliver?.([line(7, 'line 7'), line(3, 'line 3')]);

    expect(heard).toEqual(['line 7', 'line 3']);
  });

  it('unsubscribes and rethrows when the tail cannot be read', async () => {
    const { world, alice } = await withLines(1);
    world.logs.tail = async () => {
      throw new Unavailable('DATABASE.UNAVAILABLE', 'The database is not available; try again shortly.');
    };

    const error = await rejectionOf(world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined));

    expect(error).toBeInstanceOf(Unavailable);
    expect(world.logs.listenerCount('myapp')).toBe(0);
  });
});
