import { AppNotVisible, NotFound, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor, LogEntry } from '@svc/core';
import { FAKE_NOW } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

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
