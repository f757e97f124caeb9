import type { ContainerSpec, RunSpec } from '@svc/core';
import { MemoryScheduler } from '@svc/scheduler-memory';

const spec = (id: string): ContainerSpec => ({
  id,
  app: 'myapp',
  type: 'web',
  num: 1,
  release: 1,
  image: 'example/myapp:v1',
  command: 'node server.js',
  workdir: null,
  env: { SVC_APP: 'myapp', SVC_RELEASE: 'v1', PORT: '5000' },
  memory: '512M',
  cpu: 512,
});

const runSpec: RunSpec = {
  app: 'myapp',
  release: 1,
  image: 'example/myapp:v1',
  workdir: null,
  command: 'rm -rf /',
  env: {},
  timeoutSeconds: 1,
  outputLimitBytes: 10,
};

describe('MemoryScheduler', () => {
  it('start reports the container up and states returns it', async () => {
    const scheduler = new MemoryScheduler();

    expect(await scheduler.start(spec('a'))).toBe('up');

    expect(await scheduler.states(['a'])).toEqual(new Map([['a', 'up']]));
  });

  it('states leaves out ids it never started', async () => {
    const scheduler = new MemoryScheduler();
    await scheduler.start(spec('a'));

    expect(await scheduler.states(['unknown', 'a', 'other'])).toEqual(new Map([['a', 'up']]));
    expect(await scheduler.states([])).toEqual(new Map());
  });

  it('starting the same container twice records it once', async () => {
    const scheduler = new MemoryScheduler();

    await scheduler.start(spec('a'));
    await scheduler.start(spec('a'));

    expect(scheduler.size).toBe(1);
  });

  it('stop forgets the container, and stopping again or an unknown id is not an error', async () => {
    const scheduler = new MemoryScheduler();
    await scheduler.start(spec('a'));
    await scheduler.start(spec('b'));

    await scheduler.stop('a');
    await scheduler.stop('a');
    await scheduler.stop('never-started');

    expect(await scheduler.states(['a', 'b'])).toEqual(new Map([['b', 'up']]));
    expect(scheduler.size).toBe(1);
  });

  it('run resolves at once with exit code 0 and no output, and records nothing', async () => {
    const scheduler = new MemoryScheduler();

    expect(await scheduler.run(runSpec)).toEqual({ exitCode: 0, output: '' });
    expect(scheduler.size).toBe(0);
  });

  it('keeps schedulers independent of each other', async () => {
    const first = new MemoryScheduler();
    const second = new MemoryScheduler();

    await first.start(spec('a'));

    expect(await second.states(['a'])).toEqual(new Map());
  });
});
