import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * scripts/check-lock.mjs, which CI runs before `npm ci`: the repository's lock holds every
 * platform's optional packages, and a lock that lost some (as `npm install` over an existing
 * node_modules can leave it) or misses a workspace is refused with the way to repair it.
 */

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'check-lock.mjs');

interface Lock {
  packages: Record<string, { optional?: boolean; os?: string[]; optionalDependencies?: Record<string, string> }>;
}

async function check(dir?: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, dir === undefined ? [SCRIPT] : [SCRIPT, dir]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe('the lock file check', () => {
  let dir: string;
  let lock: Lock;
  let manifest: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-lock-'));
    lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
    manifest = await readFile(join(ROOT, 'package.json'), 'utf8');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function withLock(edit: (copy: Lock) => void): Promise<{ code: number; output: string }> {
    const copy = JSON.parse(JSON.stringify(lock)) as Lock;
    edit(copy);
    await writeFile(join(dir, 'package.json'), manifest);
    await writeFile(join(dir, 'package-lock.json'), JSON.stringify(copy));
    return check(dir);
  }

  it("accepts the repository's lock", async () => {
    const result = await check();

    expect(result.output).toMatch(/every platform's optional packages locked/);
    expect(result.code).toBe(0);
  });

  it("refuses a lock without another platform's binding, naming it and the repair", async () => {
    const binding = Object.keys(lock.packages).find((key) => lock.packages[key]?.optional === true && lock.packages[key]?.os?.includes('darwin'));
    expect(binding).toBeDefined();

    const result = await withLock((copy) => {
      delete copy.packages[binding as string];
    });

    expect(result.code).toBe(1);
    expect(result.output).toContain(`optional dependency ${(binding as string).replace(/^.*node_modules\//, '')} is not in the lock`);
    expect(result.output).toContain('npm run lock');
  });

  it('refuses a lock that misses a workspace', async () => {
    const result = await withLock((copy) => {
      delete copy.packages['packages/core'];
    });

    expect(result.code).toBe(1);
    expect(result.output).toContain('workspace packages/core is not in the lock');
  });
});
