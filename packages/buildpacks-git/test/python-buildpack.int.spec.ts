import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectRefusedWithoutTool, removeTools, runAsProcess, runStep, writeEnvDir } from './support/buildpack-run';
import { HOST_PYTHON, startPythonIndex, type PythonIndex } from './support/python-index';

/*
 * The built-in Python buildpack (buildpacks/python) run as a build runner would, with this
 * machine's Debian Python 3 (the process scheduler's stack) and a real package index on
 * loopback: the version check, the virtualenv and its cache, and the .profile.d script that
 * puts it on PATH for the app's processes.
 */

const SYSTEM_PATH = '/usr/bin:/bin';

function stackPython(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(HOST_PYTHON, ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'], (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
  });
}

jest.setTimeout(120_000);

describe('the Python buildpack', () => {
  let root: string;
  let build: string;
  let index: PythonIndex;
  let version: string;

  beforeAll(async () => {
    if (!existsSync(HOST_PYTHON)) throw new Error(`${HOST_PYTHON} is missing (apt-get install python3 python3-venv): the Python buildpack runs with it`);
    version = await stackPython();
    index = await startPythonIndex('127.0.0.1', 'svc-greeting', 'hello from the index');
  });

  afterAll(async () => {
    await index?.close();
    await removeTools();
  });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-python-'));
    build = join(root, 'build');
    await mkdir(build);
    await writeEnvDir(join(root, 'env'), { PIP_INDEX_URL: index.url });
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const compile = () => runStep('sh', 'python', 'compile', [build, join(root, 'cache'), join(root, 'env')], join(root, 'npm-calls'), { PATH: SYSTEM_PATH });

  it('detects a requirements.txt or a pyproject.toml, and releases no default process type', async () => {
    const calls = join(root, 'npm-calls');
    expect((await runStep('sh', 'python', 'detect', [build], calls)).code).toBe(1);
    await writeFile(join(build, 'pyproject.toml'), '[project]\nname = "app"\nversion = "1"\n');
    expect(await runStep('sh', 'python', 'detect', [build], calls)).toEqual({ code: 0, output: 'Python\n' });
    await rm(join(build, 'pyproject.toml'));
    await writeFile(join(build, 'requirements.txt'), '');
    expect(await runStep('sh', 'python', 'detect', [build], calls)).toEqual({ code: 0, output: 'Python\n' });
    expect(await runStep('sh', 'python', 'release', [build], calls)).toEqual({ code: 0, output: '---\n' });
  });

  it("installs the requirements from the app's index into a virtualenv the processes find on PATH, and takes it from the cache while they hold", async () => {
    await writeFile(join(build, 'requirements.txt'), 'svc-greeting==1.0.0\n');
    await writeFile(join(build, '.python-version'), `${version.split('.').slice(0, 2).join('.')}\n`);

    const first = await compile();

    expect(first.code).toBe(0);
    expect(first.output).toContain(`Python ${version} (.python-version asks for`);
    expect(first.output).toContain('Successfully installed svc-greeting-1.0.0');
    expect(index.requests).toContain('/simple/svc-greeting/');
    expect(await readFile(join(build, '.profile.d', 'python.sh'), 'utf8')).toContain(`export VIRTUAL_ENV='${join(build, '.venv')}'`);
    expect(await runAsProcess(build, 'python -c "import svc_greeting, sys; print(svc_greeting.GREETING, sys.prefix)"')).toBe(`hello from the index ${join(build, '.venv')}`);

    // The same dependency files again: the virtualenv comes from the cache, the index is not asked.
    const asked = index.requests.length;
    await rm(join(build, '.venv'), { recursive: true });
    const second = await compile();
    expect(second.code).toBe(0);
    expect(second.output).toContain('Restoring the virtualenv from the build cache');
    expect(index.requests.length).toBe(asked);
    expect(await runAsProcess(build, 'python -c "import svc_greeting; print(svc_greeting.GREETING)"')).toBe('hello from the index');

    // A changed requirements.txt installs again, and a pushed .venv is replaced.
    await writeFile(join(build, 'requirements.txt'), '# pinned\nsvc-greeting==1.0.0\n');
    await rm(join(build, '.venv'), { recursive: true });
    await writeFile(join(build, '.venv'), 'pushed by mistake\n');
    const third = await compile();
    expect(third.code).toBe(0);
    expect(third.output).toContain('.venv is in the pushed files: it is replaced by an install');
    expect(third.output).toContain('Successfully installed svc-greeting-1.0.0');
  });

  it('refuses a Python version the stack does not have, or one it cannot read, naming the one it has', async () => {
    await writeFile(join(build, 'requirements.txt'), '');
    await writeFile(join(build, '.python-version'), '2.7\n');
    const old = await compile();
    expect(old.code).toBe(1);
    expect(old.output).toContain(`This app asks for Python 2.7 (.python-version); this stack has Python ${version}.`);

    await rm(join(build, '.python-version'));
    await writeFile(join(build, 'runtime.txt'), 'python-3.99.1\n');
    expect((await compile()).output).toContain(`This app asks for Python 3.99.1 (runtime.txt); this stack has Python ${version}.`);

    await writeFile(join(build, 'runtime.txt'), 'latest\n');
    expect((await compile()).output).toContain('runtime.txt asks for "latest", which is not a Python version');
    expect(existsSync(join(build, '.venv'))).toBe(false);
  });

  it('fails with the reason on a dependency no index has, and on a stack without Python', async () => {
    await writeFile(join(build, 'requirements.txt'), 'svc-not-there==1.0\n');
    const missing = await compile();
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('No matching distribution found for svc-not-there==1.0');
    expect(missing.output).toContain('pip install failed');

    await expectRefusedWithoutTool('python', [build, join(root, 'cache'), join(root, 'env')], 'python3', 'Python');
  });
});
