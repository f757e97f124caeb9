import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { npmCalls, removeTools, runStep, shellsToTest, type Shell } from './support/buildpack-run';

/* The built-in plain buildpack (buildpacks/plain), tried last: it takes any app and installs nothing. */

describe.each(shellsToTest())('the plain buildpack under %s', (shell: Shell) => {
  let root: string;
  let calls: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-plain-'));
    calls = join(root, 'npm-calls');
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  afterAll(removeTools);

  it('detects any app, with a Procfile or not, and refuses a path that is no directory', async () => {
    await writeFile(join(root, 'Procfile'), 'web: httpd -f -p $PORT\n');

    expect(await runStep(shell, 'plain', 'detect', [root], calls)).toEqual({ code: 0, output: 'Plain\n' });
    expect((await runStep(shell, 'plain', 'detect', [join(root, 'Procfile')], calls)).code).toBe(1);
  });

  it('compiles by changing nothing and saying so', async () => {
    const build = join(root, 'build');
    const cache = join(root, 'cache');
    await mkdir(build);
    await writeFile(join(build, 'Procfile'), 'web: ./serve\n');

    const result = await runStep(shell, 'plain', 'compile', [build, cache, join(root, 'env')], calls);

    expect(result.code).toBe(0);
    expect(result.output).toContain('-----> Plain app: nothing to install');
    expect((await readdir(build)).sort()).toEqual(['Procfile']);
    expect(await npmCalls(calls)).toEqual([]);
  });

  it('releases no default process types', async () => {
    expect(await runStep(shell, 'plain', 'release', [root], calls)).toEqual({ code: 0, output: '--- {}\n' });
  });
});
