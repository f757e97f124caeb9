import { randomUUID } from 'node:crypto';
import type { ContainerSpec } from '@svc/core';
import { callEngine, type NodeInfo } from '../src/swarm/api';
import { SWARM_BUSYBOX, describeWithSwarm, describeWithTwoNodes, holdSwarm, steadyTraffic, stopTraffic, testSwarm, type TestSwarm } from './support/swarm';

const TIMEOUT = 180_000;
let apps = 0;
const appName = (): string => `swarm-${process.pid.toString(36)}-${++apps}`;

/**
 * A web command that serves `v<release>` at / on PORT, and at /cgi-bin/slow after 0.3 s (so
 * that requests are in flight when a task is told to stop), after saying so.
 */
const serve = (release: number): string =>
  [
    'mkdir -p /tmp/www/cgi-bin',
    `echo v${release} > /tmp/www/index.html`,
    `printf '%s\\n' '#!/bin/sh' 'sleep 0.3' 'printf "Content-Type: text/plain\\r\\n\\r\\nv${release}\\n"' > /tmp/www/cgi-bin/slow`,
    'chmod +x /tmp/www/cgi-bin/slow',
    `echo serving v${release}`,
    'exec httpd -f -p "$PORT" -h /tmp/www',
  ].join(' && ');

/** Steady traffic of slow requests to the app's web endpoints as the scheduler reports them. */
const slowTraffic = (t: TestSwarm, app: string): ReturnType<typeof steadyTraffic> => steadyTraffic(() => t.scheduler.endpoints(app, 'web'), 8, '/cgi-bin/slow');

function webSpec(app: string, release: number, num: number, command = serve(release)): ContainerSpec {
  return {
    id: randomUUID(),
    app,
    type: 'web',
    num,
    release,
    image: SWARM_BUSYBOX,
    command,
    workdir: null,
    env: { SVC_APP: app, SVC_RELEASE: `v${release}` },
    memory: '64M',
    cpu: 256,
  };
}

async function runningTaskIds(t: TestSwarm, app: string): Promise<string[]> {
  const tasks = await t.docker.listTasks({ filters: { service: [t.scheduler.serviceName(app, 'web')], 'desired-state': ['running'] } });
  return tasks.map((task) => task.ID as string).sort();
}

const settle = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

// The two-node tests drain the worker: Swarm would move other files' tasks too.
holdSwarm('exclusive');

describeWithSwarm('SwarmScheduler (real swarm)', () => {
  let t: TestSwarm;
  const app = appName();
  let current: ContainerSpec[] = [];

  beforeAll(async () => {
    t = await testSwarm();
  }, TIMEOUT);

  afterEach(() => stopTraffic());

  afterAll(async () => {
    await t?.cleanUp();
  }, TIMEOUT);

  it('runs two containers as one service of two healthy tasks with published endpoints, and their output reaches the log', async () => {
    current = [webSpec(app, 1, 1), webSpec(app, 1, 2)];
    for (const spec of current) await expect(t.scheduler.start(spec)).resolves.toBe('up');
    const endpoints = t.scheduler.endpoints(app, 'web');
    expect(endpoints).toHaveLength(2);
    expect(new Set(endpoints.map((e) => e.id)).size).toBe(2);
    await expect(t.scheduler.states(current.map((s) => s.id))).resolves.toEqual(new Map(current.map((s) => [s.id, 'up'])));
    const services = await t.docker.listServices({ filters: { name: [t.scheduler.serviceName(app, 'web')] } });
    expect(services).toHaveLength(1);
    const spec = services[0]?.Spec;
    expect(spec?.Mode?.Replicated?.Replicas).toBe(2);
    expect(spec?.UpdateConfig?.Order).toBe('start-first');
    expect((spec?.TaskTemplate as { ContainerSpec?: { User?: string } } | undefined)?.ContainerSpec?.User).toBe('65534:65534');
    expect(spec?.TaskTemplate?.Resources?.Limits?.MemoryBytes).toBe(64 * 1024 * 1024);
    expect(spec?.TaskTemplate?.Resources?.Limits?.NanoCPUs).toBe(250_000_000);
    expect(spec?.EndpointSpec?.Ports?.[0]?.PublishMode).toBe('host');
    for (let waited = 0; waited < 10_000 && !(await t.lines(app)).some((l) => /\[web\.[12]\]: serving v1$/.test(l)); waited += 200) await settle(200);
    expect((await t.lines(app)).some((l) => /\[web\.[12]\]: serving v1$/.test(l))).toBe(true);
  }, TIMEOUT);

  it('rolls a new release out as a service of its own, up before the old one stops, with no failed request under steady traffic', async () => {
    const traffic = slowTraffic(t, app);
    await settle(500);
    const next = [webSpec(app, 2, 1), webSpec(app, 2, 2)];
    // What the core's rollout does: start the new containers, then stop the replaced ones.
    for (const spec of next) await expect(t.scheduler.start(spec)).resolves.toBe('up');
    for (const spec of current) await t.scheduler.stop(spec.id);
    await settle(1500);
    const report = await traffic.stop();
    expect(report.failures).toEqual([]);
    expect(report.failed).toBe(0);
    expect(report.ok).toBeGreaterThan(30);
    expect(report.bodies.get('v1')).toBeGreaterThan(0);
    expect(report.last.every((body) => body === 'v2')).toBe(true);
    await expect(t.scheduler.states([...current, ...next].map((s) => s.id))).resolves.toEqual(new Map(next.map((s) => [s.id, 'up'])));
    expect(t.scheduler.endpoints(app, 'web')).toHaveLength(2);
    current = next;
    process.stdout.write(`rolling update: ${report.ok} requests answered, ${report.failed} failed (${[...report.bodies].map(([b, n]) => `${b}: ${n}`).join(', ')})\n`);
  }, TIMEOUT);

  it('a release whose task fails: the start fails with the reason, its service is removed, and the old release keeps serving untouched', async () => {
    const traffic = slowTraffic(t, app);
    const broken = webSpec(app, 3, 1, 'echo giving up; exit 3');
    const failure = await t.scheduler.start(broken).then(
      () => null,
      (error: unknown) => error as Error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(failure?.message).toMatch(/roll|exit/);
    // The core stops what a failed rollout started: that must not touch the service.
    await t.scheduler.stop(broken.id);
    await settle(1000);
    const report = await traffic.stop();
    expect(report.failures).toEqual([]);
    expect(report.last.every((body) => body === 'v2')).toBe(true);
    await expect(t.scheduler.states(current.map((s) => s.id))).resolves.toEqual(new Map(current.map((s) => [s.id, 'up'])));
    await expect(t.scheduler.states([broken.id])).resolves.toEqual(new Map());
    expect(t.scheduler.endpoints(app, 'web')).toHaveLength(2);
    expect((await t.lines(app)).some((line) => /did not start/.test(line))).toBe(true);
  }, TIMEOUT);

  it('starting a started container again replaces every task (a forced update) with no failed request', async () => {
    const before = await runningTaskIds(t, app);
    const traffic = slowTraffic(t, app);
    await expect(t.scheduler.start(current[0] as ContainerSpec)).resolves.toBe('up');
    await settle(1500);
    const report = await traffic.stop();
    expect(report.failures).toEqual([]);
    const after = await runningTaskIds(t, app);
    expect(after).toHaveLength(2);
    expect(after.filter((id) => before.includes(id))).toEqual([]);
  }, TIMEOUT);

  it('a restarted controller adopts the services as they run and removes those nothing restored', async () => {
    const other = appName();
    const orphan = webSpec(other, 1, 1);
    await t.scheduler.start(orphan);
    const before = await runningTaskIds(t, app);
    const again = t.again();
    for (const spec of current) await expect(again.start(spec)).resolves.toBe('up');
    expect(await runningTaskIds(t, app)).toEqual(before);
    await expect(again.states(current.map((s) => s.id))).resolves.toEqual(new Map(current.map((s) => [s.id, 'up'])));
    expect(await again.reapOrphans()).toBe(1);
    expect(await t.docker.listServices({ filters: { name: [t.scheduler.serviceName(other, 'web')] } })).toEqual([]);
    expect(await t.docker.listServices({ filters: { name: [t.scheduler.serviceName(app, 'web')] } })).toHaveLength(1);
    await again.shutdown();
  }, TIMEOUT);

  it('scales down and removes the service with its last container', async () => {
    await t.scheduler.stop((current[1] as ContainerSpec).id);
    expect(await runningTaskIds(t, app)).toHaveLength(1);
    await t.scheduler.stop((current[0] as ContainerSpec).id);
    expect(await t.docker.listServices({ filters: { name: [t.scheduler.serviceName(app, 'web')] } })).toEqual([]);
    expect(t.scheduler.endpoints(app, 'web')).toEqual([]);
  }, TIMEOUT);
});

describeWithTwoNodes('SwarmScheduler on two nodes (real swarm)', () => {
  let t: TestSwarm;
  const app = appName();
  let worker: NodeInfo | null = null;

  beforeAll(async () => {
    t = await testSwarm();
  }, TIMEOUT);

  afterEach(() => stopTraffic());

  afterAll(async () => {
    if (worker !== null) await setAvailability(t, worker.ID, 'active').catch(() => undefined);
    await t?.cleanUp();
  }, TIMEOUT);

  it('spreads replicas over both nodes, routes to each, and keeps serving while the worker is drained', async () => {
    const nodes = await callEngine<NodeInfo[]>(t.docker, 'GET', '/nodes');
    expect(nodes.filter((n) => n.Status?.State === 'ready')).toHaveLength(2);
    worker = nodes.find((n) => n.ManagerStatus === undefined) ?? null;
    expect(worker).not.toBeNull();
    const specs = [webSpec(app, 1, 1), webSpec(app, 1, 2)];
    for (const spec of specs) await expect(t.scheduler.start(spec)).resolves.toBe('up');
    expect(new Set(t.scheduler.placement(app, 'web')).size).toBe(2);
    const endpoints = t.scheduler.endpoints(app, 'web');
    expect(new Set(endpoints.map((e) => e.host)).size).toBe(2);

    const traffic = slowTraffic(t, app);
    await settle(1000);
    await setAvailability(t, (worker as NodeInfo).ID, 'drain');
    const deadline = Date.now() + 60_000;
    for (;;) {
      const placement = t.scheduler.placement(app, 'web');
      if (placement.length === 2 && placement.every((node) => node !== (worker as NodeInfo).ID)) break;
      if (Date.now() > deadline) throw new Error(`the tasks did not leave the drained worker: ${placement.join(' ')}`);
      await settle(250);
    }
    await settle(1500);
    const report = await traffic.stop();
    expect(report.failures).toEqual([]);
    expect(report.ok).toBeGreaterThan(20);
    await expect(t.scheduler.states(specs.map((s) => s.id))).resolves.toEqual(new Map(specs.map((s) => [s.id, 'up'])));
    expect(t.scheduler.endpoints(app, 'web')).toHaveLength(2);
    process.stdout.write(`drain: ${report.ok} requests answered, ${report.failed} failed\n`);
    for (const spec of specs) await t.scheduler.stop(spec.id);
  }, TIMEOUT);

  it('spreads a release over both nodes again after the worker was drained and made active again', async () => {
    const spread = appName();
    const workerId = (worker as NodeInfo).ID;
    await setAvailability(t, workerId, 'drain');
    // A release while the worker is drained: every task on the manager.
    const during = [webSpec(spread, 1, 1), webSpec(spread, 1, 2)];
    await t.scheduler.rollType(during, []);
    expect(t.scheduler.placement(spread, 'web')).toHaveLength(2);
    expect(t.scheduler.placement(spread, 'web').filter((node) => node === workerId)).toEqual([]);
    await setAvailability(t, workerId, 'active');
    // The next release, as the core's rollout does it: the whole type, then the replaced ones stopped.
    const traffic = slowTraffic(t, spread);
    const after = [webSpec(spread, 2, 1), webSpec(spread, 2, 2)];
    await expect(t.scheduler.rollType(after, during.map((s) => s.id))).resolves.toEqual(new Map(after.map((s) => [s.id, 'up'])));
    for (const spec of during) await t.scheduler.stop(spec.id);
    await settle(1000);
    const report = await traffic.stop();
    expect(report.failures).toEqual([]);
    expect(report.last.every((body) => body === 'v2')).toBe(true);
    const placement = t.scheduler.placement(spread, 'web');
    expect(placement).toHaveLength(2);
    expect(new Set(placement).size).toBe(2);
    expect(new Set(t.scheduler.endpoints(spread, 'web').map((e) => e.host)).size).toBe(2);
    process.stdout.write(`release after an undrain: tasks on ${placement.join(' ')}; ${report.ok} requests answered, ${report.failed} failed\n`);
    for (const spec of after) await t.scheduler.stop(spec.id);
  }, TIMEOUT);
});

async function setAvailability(t: TestSwarm, id: string, availability: 'active' | 'drain'): Promise<void> {
  const node = await callEngine<NodeInfo & { Version: { Index: number }; Spec: Record<string, unknown> }>(t.docker, 'GET', `/nodes/${id}`);
  await callEngine(t.docker, 'POST', `/nodes/${id}/update`, { version: node.Version.Index }, { ...node.Spec, Availability: availability });
}
