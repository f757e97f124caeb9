import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryLogStore } from '@svc/core/testing';
import { ProcessScheduler, type ProcessRecord } from '@svc/scheduler-process';
import { aSpec, eventually } from './support/fixtures';
import { describeWithSandbox, testUidRange } from './support/sandbox';

jest.setTimeout(120_000);

/** Whether a process exists and is not a zombie. */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describeWithSandbox('ProcessScheduler: sandboxed groups held by the next controller process (real processes)', () => {
  let dataDir: string;
  let logs: InMemoryLogStore;
  // Two uids only: the third app needs one of an app that runs nothing.
  const range = testUidRange();
  const uidRange = { from: range.from, to: range.from + 1 };
  const schedulers: ProcessScheduler[] = [];
  let held: ProcessRecord[] = [];

  const scheduler = async (): Promise<ProcessScheduler> => {
    const s = new ProcessScheduler({
      dataDir,
      logs,
      portRange: { from: 48000, to: 48999 },
      startTimeoutMs: 20_000,
      settleMs: 300,
      stopTimeoutMs: 3000,
      memoryPollMs: 200,
      backoff: { initialMs: 60_000, maxMs: 60_000, resetAfterMs: 60_000 },
      sandbox: { uidRange, maxProcesses: 64 },
      outliveController: true,
    });
    schedulers.push(s);
    await expect(s.prepare()).resolves.toEqual({ mode: 'on', problem: null });
    return s;
  };
  const messages = (app: string, source?: string): string[] => logs.entries(app).filter((e) => source === undefined || e.source === source).map((e) => e.message);

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-held-data-'));
    logs = new InMemoryLogStore();
    held = [];
  });

  afterEach(async () => {
    for (const record of held) {
      if (record.sandbox !== undefined && running(record.sandbox.init)) process.kill(record.sandbox.init, 'SIGKILL');
    }
    // The first scheduler only detached: the last one takes the firewall chain and the cgroups away.
    for (const s of schedulers.splice(0).reverse()) await s.shutdown();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('holds a detached sandbox by its namespace: its uid goes to no other app, its stop is graceful, its cgroup is removed', async () => {
    const first = await scheduler();
    const spec = aSpec({ app: 'held', type: 'worker', command: 'trap "echo bye; exit 0" TERM; while true; do echo tick; sleep 0.05; done' });
    await first.start(spec);
    await first.detach();

    const next = await scheduler();
    held = await next.leftovers.hold();
    expect(held).toEqual([expect.objectContaining({ id: `held-${spec.id}`, app: 'held', sandbox: expect.objectContaining({ namespace: expect.stringMatching(/^pid:\[[0-9]+\]$/) }) })]);
    const [record] = held as [ProcessRecord];
    expect(running((record.sandbox as { init: number }).init)).toBe(true);
    expect(record.cgroups?.length).toBeGreaterThan(0);
    expect(record.cgroups?.every((dir) => existsSync(dir))).toBe(true);

    // The held app keeps its uid: a new app takes the one of an app that runs nothing, never the held one's.
    const other = await next.lendUser('other');
    await other.release();
    const third = await next.lendUser('third');
    await third.release();
    const heldUid = (JSON.parse(readFileSync(join(dataDir, 'sandbox', 'uids.json'), 'utf8')) as Record<string, number>).held;
    expect(heldUid).toBe(uidRange.from);
    expect(third.uid).toBe(uidRange.to);

    await expect(next.leftovers.stop(held)).resolves.toBe(1);
    // SIGTERM reached the app's shell inside the namespace (not bubblewrap outside it): it said goodbye.
    expect(messages('held', 'held[worker.1]')).toContain('bye');
    expect(running((record.sandbox as { init: number }).init)).toBe(false);
    expect(record.cgroups?.filter((dir) => existsSync(dir))).toEqual([]);
  });

  it('kills the rest of a held sandbox when the kernel killed a process of it for want of memory', async () => {
    const first = await scheduler();
    // The node process (started once the first scheduler is gone) is the one killed; the sleep keeps the sandbox alive.
    const grow = `node -e "const hog = []; setInterval(() => hog.push(Buffer.alloc(16 * 1024 * 1024, 1)), 50)"`;
    const spec = aSpec({ app: 'hog', type: 'worker', command: `(sleep 2; exec ${grow}) & exec sleep 100000`, memory: '64M' });
    await first.start(spec);
    await first.detach();

    const next = await scheduler();
    held = await next.leftovers.hold();
    const init = (held[0]?.sandbox as { init: number }).init;
    expect(running(init)).toBe(true);

    await eventually(() => !running(init), 30_000, 'the held sandbox killed');
    await eventually(() => messages('hog').some((m) => /^worker\.1: a process of it was killed for using more than its memory limit \(out of memory\): killing the rest/.test(m)), 5000, 'the reason in the log');
    await expect(next.leftovers.stop(held)).resolves.toBe(0);
  });
});
