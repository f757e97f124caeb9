import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

jest.setTimeout(120_000);

/*
 * `npm start`'s prestart (scripts/build-before-start.mjs) on a build of two packages, the
 * second referring to the first, as the repository's tsconfig.json refers to its packages:
 * it names each package it compiles, then says how many it compiled, or that nothing changed,
 * and it passes the compiler's errors on with tsc's exit status.
 */

const SCRIPT = join(__dirname, '..', '..', '..', 'scripts', 'build-before-start.mjs');

function prestart(project: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, project], { timeout: 100_000 }, (error, _stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stderr }),
    );
  });
}

describe('the build before start', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-prestart-'));
    const options = { composite: true, outDir: 'dist', rootDir: 'src', strict: true };
    for (const [name, references] of [['first', []], ['second', [{ path: '../first' }]]] as const) {
      await mkdir(join(root, name, 'src'), { recursive: true });
      await writeFile(join(root, name, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, include: ['src'], references }));
      await writeFile(join(root, name, 'src', 'index.ts'), `export const ${name} = 1;\n`);
    }
    await writeFile(join(root, 'tsconfig.json'), JSON.stringify({ files: [], references: [{ path: 'first' }, { path: 'second' }] }));
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('names what it compiles the first time, then says that nothing changed, then compiles only the package that changed', async () => {
    const first = await prestart(join(root, 'tsconfig.json'));
    const again = await prestart(join(root, 'tsconfig.json'));
    await writeFile(join(root, 'second', 'src', 'index.ts'), 'export const second = 2;\n');
    const changed = await prestart(join(root, 'tsconfig.json'));

    const lines = (text: string): string[] => text.trim().split('\n').map((line) => line.replace(/\d+\.\d s/, 'N s').replace(/ {2}\S*\/(first|second)$/, '  $1'));
    expect(first.code).toBe(0);
    expect(lines(first.stderr)).toEqual(['compiling the TypeScript packages that changed (all of them the first time: about a minute)...', '  first', '  second', 'compiled 2 of 2 packages in N s']);
    expect(again.code).toBe(0);
    expect(lines(again.stderr)).toEqual(['TypeScript packages: nothing changed since the last build (N s)']);
    expect(changed.code).toBe(0);
    expect(lines(changed.stderr)).toEqual(['compiling the TypeScript packages that changed (all of them the first time: about a minute)...', '  second', 'compiled 1 of 2 packages in N s']);
  });

  it('passes the compiler\'s errors on and exits with its status', async () => {
    await writeFile(join(root, 'first', 'src', 'index.ts'), 'export const first: number = "one";\n');

    const failed = await prestart(join(root, 'tsconfig.json'));

    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/first\/src\/index\.ts\(1,14\): error TS2322/);
    expect(failed.stderr).toContain('the TypeScript packages did not compile (tsc -b exited with');
  });
});
