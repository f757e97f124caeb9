import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/* The CPU slots busy test files share (scripts/test-lanes.cjs, jest.config.ts). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lanes = require('../../../scripts/test-lanes.cjs') as {
  cpuSlots(env?: Record<string, string | undefined>): number;
  testWorkers(env?: Record<string, string | undefined>): number;
  waitsMostly(path: string): boolean;
  takeCpuSlot(what: string, slots: number, dir: string): Promise<() => void>;
};

describe('the test lanes', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-lanes-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('runs one more worker than there are CPU slots, each set by its variable', () => {
    expect(lanes.testWorkers({ TEST_CPU_SLOTS: '2' })).toBe(3);
    expect(lanes.testWorkers({ TEST_CPU_SLOTS: '2', TEST_WORKERS: '1' })).toBe(1);
    expect(lanes.cpuSlots({ TEST_CPU_SLOTS: '5' })).toBe(5);
    expect(lanes.cpuSlots({ TEST_CPU_SLOTS: 'many' })).toBeGreaterThanOrEqual(2);
  });

  it('tells a file that drives the swarm (it mostly waits) from the others', async () => {
    // Written in two pieces, so that this file is not taken for one that drives the swarm.
    await writeFile(join(dir, 'swarm.spec.ts'), `${'holdSwarm'}('shared');\n`);
    await writeFile(join(dir, 'lost.spec.ts'), `${'holdSwarm'}('exclusive', HOST);\n`);
    await writeFile(join(dir, 'busy.spec.ts'), "it('works', () => undefined);\n");
    expect(lanes.waitsMostly(join(dir, 'swarm.spec.ts'))).toBe(true);
    expect(lanes.waitsMostly(join(dir, 'lost.spec.ts'))).toBe(true);
    expect(lanes.waitsMostly(join(dir, 'busy.spec.ts'))).toBe(false);
    expect(lanes.waitsMostly(join(dir, 'missing.spec.ts'))).toBe(false);
  });

  it('gives out no more slots than there are, and a slot given back goes to the one waiting', async () => {
    const first = await lanes.takeCpuSlot('a', 2, dir);
    await lanes.takeCpuSlot('b', 2, dir);
    let third: (() => void) | null = null;
    const waiting = lanes.takeCpuSlot('c', 2, dir).then((giveBack) => (third = giveBack));
    await new Promise((done) => setTimeout(done, 500));
    expect(third).toBeNull();
    first();
    await waiting;
    expect(third).not.toBeNull();
    expect((await readdir(dir)).sort()).toEqual(['slot-0', 'slot-1']);
  });

  it('takes back the slot of a process that is gone', async () => {
    // A process that has ended: its id names no live process.
    const gone = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }));
    await writeFile(join(dir, 'slot-0'), JSON.stringify({ pid: gone, what: 'a crashed worker' }));
    const giveBack = await lanes.takeCpuSlot('d', 1, dir);
    giveBack();
    expect(await readdir(dir)).toEqual([]);
  });
});
