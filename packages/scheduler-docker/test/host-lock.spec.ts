import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lockDirectory, takeLock } from './support/host-lock';

/** The lock of the test files that share a swarm (support/host-lock.ts), on a name of its own. */
describe('takeLock, a lock across test processes', () => {
  let name: string;
  beforeEach(() => {
    name = `host-lock-test ${randomBytes(4).toString('hex')}`;
  });
  afterEach(async () => {
    await rm(lockDirectory(name), { recursive: true, force: true });
  });

  it('lets shared holders in together, and keeps an exclusive taker out until the last one is done', async () => {
    const first = await takeLock(name, 'shared', 1000);
    const second = await takeLock(name, 'shared', 1000);
    await expect(takeLock(name, 'exclusive', 600)).rejects.toThrow(/^the exclusive lock host-lock-test \w+ was not had within 600 ms: held by pid \d+ \(host-lock\.spec\.ts\)/);
    // The refused taker took its announcement back: shared holders still come in.
    const third = await takeLock(name, 'shared', 1000);
    await first();
    await second();
    const exclusive = takeLock(name, 'exclusive', 5000);
    await new Promise((done) => setTimeout(done, 400));
    await third();
    const release = await exclusive;
    await release();
    expect(await readdir(lockDirectory(name))).toEqual([]);
  });

  it('keeps shared and exclusive takers out while an exclusive holder has it', async () => {
    const release = await takeLock(name, 'exclusive', 1000);
    await expect(takeLock(name, 'shared', 500)).rejects.toThrow(/^the shared lock .* was not had within 500 ms: held by pid \d+/);
    await expect(takeLock(name, 'exclusive', 500)).rejects.toThrow(/^the exclusive lock .* was not had within 500 ms/);
    const waiting = takeLock(name, 'shared', 5000);
    await release();
    const shared = await waiting;
    await shared();
    // Releasing twice is harmless.
    await release();
  });

  it('takes over from holders whose process is gone', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const dir = lockDirectory(name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'exclusive'), JSON.stringify({ pid: dead, what: 'a crashed test', since: '' }));
    await writeFile(join(dir, `shared-${dead}-0`), JSON.stringify({ pid: dead, what: 'a crashed test', since: '' }));
    const release = await takeLock(name, 'exclusive', 1000);
    expect(await readdir(dir)).toEqual(['exclusive']);
    await release();
  });
});
