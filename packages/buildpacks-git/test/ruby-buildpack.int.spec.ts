import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expectRefusedWithoutTool, removeTools, runAsProcess, runStep } from './support/buildpack-run';
import { HOST_RUBY, vendoredGemApp } from './support/ruby-gems';

/*
 * The built-in Ruby buildpack (buildpacks/ruby) run as a build runner would, with this
 * machine's Debian Ruby and bundler (the process scheduler's stack): gems installed from
 * vendor/cache (nothing fetched) into vendor/bundle, the bundle settings every process gets
 * through .profile.d, the build cache, and the reasons a build fails.
 */

jest.setTimeout(180_000);

const SYSTEM_PATH = '/usr/bin:/bin';

describe('the Ruby buildpack', () => {
  let root: string;
  let build: string;
  let app: Record<string, Buffer | string>;

  beforeAll(async () => {
    if (!existsSync(HOST_RUBY)) throw new Error(`${HOST_RUBY} is missing (apt-get install ruby bundler): the Ruby buildpack runs with it`);
    app = await vendoredGemApp('hello from a vendored gem');
  });

  afterAll(removeTools);

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-bp-ruby-'));
    build = join(root, 'build');
    await mkdir(build);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const writeApp = async (files: Record<string, Buffer | string>): Promise<void> => {
    for (const [name, content] of Object.entries(files)) {
      await mkdir(dirname(join(build, name)), { recursive: true });
      await writeFile(join(build, name), content);
    }
  };
  const compile = () => runStep('sh', 'ruby', 'compile', [build, join(root, 'cache'), join(root, 'env')], join(root, 'npm-calls'), { PATH: SYSTEM_PATH });
  const release = () => runStep('sh', 'ruby', 'release', [build], join(root, 'npm-calls'));
  const greeting = 'bundle exec ruby -e "require \'svc_greeting\'; puts SvcGreeting::TEXT"';

  it('detects a Gemfile, installs vendor/cache offline into vendor/bundle that every process finds, and restores it from the cache', async () => {
    expect((await runStep('sh', 'ruby', 'detect', [build], join(root, 'npm-calls'))).code).toBe(1);
    await writeApp(app);
    expect(await runStep('sh', 'ruby', 'detect', [build], join(root, 'npm-calls'))).toEqual({ code: 0, output: 'Ruby\n' });

    const first = await compile();
    expect(first.output).toContain('Installing from vendor/cache (nothing is fetched)');
    expect(first.output).toContain('Installing svc_greeting 1.0.0');
    expect(first.code).toBe(0);
    expect(await runAsProcess(build, greeting)).toBe('hello from a vendored gem');
    expect(await release()).toEqual({ code: 0, output: '---\n' });

    await rm(join(build, 'vendor', 'bundle'), { recursive: true });
    const second = await compile();
    expect(second.code).toBe(0);
    expect(second.output).toContain('Restoring the gems from the build cache');
    expect(await runAsProcess(build, greeting)).toBe('hello from a vendored gem');
  });

  it('releases web as rackup for a Rack app (config.ru)', async () => {
    await writeFile(join(build, 'config.ru'), 'run ->(env) { [200, {}, ["ok"]] }\n');
    expect(await release()).toEqual({ code: 0, output: '---\ndefault_process_types:\n  web: bundle exec rackup config.ru -p $PORT -o 0.0.0.0\n' });
  });

  it('refuses an app without Gemfile.lock, a gem nowhere to be found, and a stack without Ruby', async () => {
    await writeApp({ Gemfile: app.Gemfile as string });
    const unlocked = await compile();
    expect(unlocked.code).toBe(1);
    expect(unlocked.output).toContain('No Gemfile.lock: run bundle lock (or bundle install) and commit Gemfile.lock');

    // The lockfile names a gem vendor/cache does not hold.
    await writeApp({ ...app, 'Gemfile.lock': (app['Gemfile.lock'] as string).replace(/1\.0\.0/g, '2.0.0') });
    const missing = await compile();
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('bundle install failed');
    expect(missing.output).toMatch(/svc_greeting/);

    await expectRefusedWithoutTool('ruby', [build, join(root, 'cache'), join(root, 'env')], 'ruby', 'Ruby');
  });
});
