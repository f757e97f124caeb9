import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expectRefusedWithoutTool, removeTools, runAsProcess, runStep } from './support/buildpack-run';

/*
 * The built-in Go buildpack (buildpacks/go) run as a build runner would, with this machine's
 * Debian Go (the process scheduler's stack): a module with a vendored dependency (nothing
 * fetched), its programs in bin/ on PATH through .profile.d, the build cache, and the reasons
 * a build fails.
 */

jest.setTimeout(180_000);

const SYSTEM_PATH = '/usr/bin:/bin';
const HOST_GO = '/usr/bin/go';

/** A module whose root program prints a vendored module's text. */
const MODULE: Record<string, string> = {
  'go.mod': 'module example.com/hello\n\ngo 1.19\n\nrequire example.com/greeting v1.0.0\n',
  'main.go': 'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/greeting"\n)\n\nfunc main() { fmt.Println(greeting.Text) }\n',
  'vendor/modules.txt': '# example.com/greeting v1.0.0\n## explicit\nexample.com/greeting\n',
  'vendor/example.com/greeting/greeting.go': 'package greeting\n\nconst Text = "hello from a vendored module"\n',
};

async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, name)), { recursive: true });
    await writeFile(join(root, name), content);
  }
}

describe('the Go buildpack', () => {
  let root: string;
  let build: string;

  beforeAll(() => {
    if (!existsSync(HOST_GO)) throw new Error(`${HOST_GO} is missing (apt-get install golang-go): the Go buildpack runs with it`);
  });

  afterAll(removeTools);

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-go-'));
    build = join(root, 'build');
    await mkdir(build);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const compile = () => runStep('sh', 'go', 'compile', [build, join(root, 'cache'), join(root, 'env')], join(root, 'npm-calls'), { PATH: SYSTEM_PATH });
  const release = () => runStep('sh', 'go', 'release', [build], join(root, 'npm-calls'));

  it('detects a go.mod, builds the vendored module offline into bin/ on PATH, names it web, and builds again from the cache', async () => {
    expect((await runStep('sh', 'go', 'detect', [build], join(root, 'npm-calls'))).code).toBe(1);
    await writeTree(build, MODULE);
    expect(await runStep('sh', 'go', 'detect', [build], join(root, 'npm-calls'))).toEqual({ code: 0, output: 'Go\n' });

    // GOPROXY=off: a module fetched from anywhere fails the build.
    await writeTree(join(root, 'env'), { GOPROXY: 'off' });
    const first = await compile();
    expect(first.output).toContain('Using vendor/ (nothing is fetched)');
    expect(first.output).toContain('Building 1 program(s): example.com/hello');
    expect(first.code).toBe(0);
    expect(await runAsProcess(build, 'hello')).toBe('hello from a vendored module');
    expect(await release()).toEqual({ code: 0, output: '---\ndefault_process_types:\n  web: hello\n' });
    expect((await readdir(join(root, 'cache', 'go', 'build'))).length).toBeGreaterThan(0);

    await rm(join(build, 'bin'), { recursive: true });
    const second = await compile();
    expect(second.code).toBe(0);
    expect(await runAsProcess(build, 'hello')).toBe('hello from a vendored module');
  });

  it('builds every main package of the module, naming no web process for several', async () => {
    await writeTree(build, { ...MODULE, 'cmd/worker/main.go': 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("working") }\n' });
    const compiled = await compile();
    expect(compiled.code).toBe(0);
    expect(compiled.output).toContain('Building 2 program(s): example.com/hello example.com/hello/cmd/worker');
    expect(await runAsProcess(build, 'worker')).toBe('working');
    expect(await release()).toEqual({ code: 0, output: '---\n' });
  });

  it("fails with the compiler's reason, on a module without a program, and on a stack without Go", async () => {
    await writeTree(build, { ...MODULE, 'main.go': 'package main\n\nfunc main() { undefinedThing() }\n' });
    const broken = await compile();
    expect(broken.code).toBe(1);
    expect(broken.output).toContain('undefined: undefinedThing');
    expect(broken.output).toContain('go build failed');

    await writeTree(build, { 'main.go': 'package lib\n\nconst X = 1\n' });
    const library = await compile();
    expect(library.code).toBe(1);
    expect(library.output).toContain('The module has no main package: nothing to run');

    await expectRefusedWithoutTool('go', [build, join(root, 'cache'), join(root, 'env')], 'go', 'Go');
  });
});
