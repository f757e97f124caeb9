import type { ContainerSpec, RunSpec } from '@svc/core';
import { FakeScheduler } from '@svc/core/testing';
import { CHAOS_OPERATIONS, ChaosFault, ChaosScheduler, parseChaosSpec, seededRandom } from '@svc/scheduler-chaos';

const spec = (id: string): ContainerSpec => ({
  id,
  app: 'myapp',
  type: 'web',
  num: 1,
  release: 1,
  image: 'example/myapp:v1',
  command: null,
  workdir: null,
  env: {},
  memory: null,
  cpu: null,
});

const runSpec: RunSpec = {
  app: 'myapp',
  release: 1,
  image: 'example/myapp:v1',
  workdir: null,
  command: 'true',
  env: {},
  timeoutSeconds: 1,
  outputLimitBytes: 10,
};

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof ChaosFault ? `fault:${error.operation}` : `other:${String(error)}`;
  }
}

describe('ChaosScheduler', () => {
  it('passes every call through when no rate is set', async () => {
    const inner = new FakeScheduler();
    const chaos = new ChaosScheduler(inner, { rates: {} });
    await expect(chaos.start(spec('a'))).resolves.toBe('up');
    await expect(chaos.states(['a', 'b'])).resolves.toEqual(new Map([['a', 'up']]));
    await expect(chaos.run(runSpec)).resolves.toEqual({ exitCode: 0, output: '' });
    await chaos.stop('a');
    expect(inner.running()).toEqual([]);
    expect(chaos.injected).toEqual({ create: 0, start: 0, stop: 0, destroy: 0, run: 0, states: 0 });
  });

  it("passes a build's check through without drawing a fault, even with every rate at 1", async () => {
    const inner = new FakeScheduler();
    inner.refuseToRun((build) => build.image === 'gone:1', 'image gone:1 cannot be pulled: not found');
    const chaos = new ChaosScheduler(inner, { rates: { create: 1, start: 1, stop: 1, destroy: 1, run: 1, states: 1 } });
    const build = { app: 'myapp', release: 2, image: 'gone:1', workdir: null, procfile: {} };

    await expect(chaos.checkRunnable?.(build)).resolves.toBe('image gone:1 cannot be pulled: not found');
    await expect(chaos.checkRunnable?.({ ...build, image: 'here:1' })).resolves.toBeNull();
    expect(chaos.injected).toEqual({ create: 0, start: 0, stop: 0, destroy: 0, run: 0, states: 0 });
  });

  it('a create fault fails start before the wrapped scheduler is called', async () => {
    const inner = new FakeScheduler();
    const chaos = new ChaosScheduler(inner, { rates: { create: 1 } });
    expect(await outcome(chaos.start(spec('a')))).toBe('fault:create');
    expect(inner.calls).toEqual([]);
    expect(chaos.injected.create).toBe(1);
  });

  it('a start fault fails start after the wrapped scheduler started the container', async () => {
    const inner = new FakeScheduler();
    const chaos = new ChaosScheduler(inner, { rates: { start: 1 } });
    expect(await outcome(chaos.start(spec('a')))).toBe('fault:start');
    expect(inner.running().map((c) => c.id)).toEqual(['a']);
  });

  it('a stop fault leaves the container running; a destroy fault stops it and still fails', async () => {
    const inner = new FakeScheduler();
    await inner.start(spec('a'));
    await inner.start(spec('b'));
    const stopping = new ChaosScheduler(inner, { rates: { stop: 1 } });
    expect(await outcome(stopping.stop('a'))).toBe('fault:stop');
    expect(inner.running().map((c) => c.id)).toEqual(['a', 'b']);
    const destroying = new ChaosScheduler(inner, { rates: { destroy: 1 } });
    expect(await outcome(destroying.stop('b'))).toBe('fault:destroy');
    expect(inner.running().map((c) => c.id)).toEqual(['a']);
  });

  it('run and states faults fail those calls without reaching the wrapped scheduler', async () => {
    const inner = new FakeScheduler();
    const chaos = new ChaosScheduler(inner, { rates: { run: 1, states: 1 } });
    expect(await outcome(chaos.run(runSpec))).toBe('fault:run');
    expect(await outcome(chaos.states(['a']))).toBe('fault:states');
    expect(inner.calls).toEqual([]);
  });

  it('fails at about the configured rate, and the same seed fails the same calls', async () => {
    const sequence = async (seed: number): Promise<string[]> => {
      const chaos = new ChaosScheduler(new FakeScheduler(), { rates: { run: 0.3 }, seed });
      const results: string[] = [];
      for (let i = 0; i < 1000; i++) results.push(await outcome(chaos.run(runSpec)));
      return results;
    };
    const first = await sequence(42);
    const failures = first.filter((r) => r === 'fault:run').length;
    expect(failures).toBeGreaterThan(240);
    expect(failures).toBeLessThan(360);
    expect(await sequence(42)).toEqual(first);
    expect(await sequence(43)).not.toEqual(first);
  });

  it('setRates({}) stops injecting faults', async () => {
    const chaos = new ChaosScheduler(new FakeScheduler(), { rates: { run: 1 } });
    expect(await outcome(chaos.run(runSpec))).toBe('fault:run');
    chaos.setRates({});
    expect(await outcome(chaos.run(runSpec))).toBe('ok');
    expect(chaos.rates).toEqual({});
  });

  it('refuses rates outside 0..1 and unknown operations', () => {
    expect(() => new ChaosScheduler(new FakeScheduler(), { rates: { start: 1.5 } })).toThrow(RangeError);
    expect(() => new ChaosScheduler(new FakeScheduler(), { rates: { start: Number.NaN } })).toThrow(RangeError);
    expect(() => new ChaosScheduler(new FakeScheduler(), { rates: { boot: 0.5 } as never })).toThrow(/unknown operation boot/);
    expect(() => new ChaosScheduler(new FakeScheduler(), { rates: {}, latencyMs: -1 })).toThrow(RangeError);
  });

  it('waits up to latencyMs before each call', async () => {
    const chaos = new ChaosScheduler(new FakeScheduler(), { rates: {}, latencyMs: 30, seed: 3 });
    const started = Date.now();
    for (let i = 0; i < 10; i++) await chaos.states([]);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(20);
    expect(elapsed).toBeLessThan(2000);
  });
});

describe('seededRandom', () => {
  it('yields numbers in [0, 1) that depend on the seed only', () => {
    const a = seededRandom(7);
    const values = Array.from({ length: 100 }, () => a());
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
    const b = seededRandom(7);
    expect(Array.from({ length: 100 }, () => b())).toEqual(values);
  });
});

describe('parseChaosSpec', () => {
  it('reads rates, seed and latency', () => {
    expect(parseChaosSpec('start=0.2, stop=0.1,run=0.5,seed=42,latency=20')).toEqual({
      rates: { start: 0.2, stop: 0.1, run: 0.5 },
      seed: 42,
      latencyMs: 20,
    });
    expect(parseChaosSpec('create=1,destroy=0,states=.25')).toEqual({ rates: { create: 1, destroy: 0, states: 0.25 } });
    expect(parseChaosSpec('seed=9')).toEqual({ rates: {}, seed: 9 });
  });

  it('names every operation of the port mapping', () => {
    expect([...CHAOS_OPERATIONS]).toEqual(['create', 'start', 'stop', 'destroy', 'run', 'states']);
  });

  it.each([
    ['', /at least one item/],
    ['start', /not name=value/],
    ['start=2', /rate of start/],
    ['start=-0.1', /rate of start/],
    ['start=abc', /rate of start/],
    ['boot=0.5', /unknown item "boot"/],
    ['seed=-1', /seed/],
    ['latency=999999', /latency/],
  ])('refuses %j', (text, message) => {
    expect(() => parseChaosSpec(text)).toThrow(message);
  });
});
