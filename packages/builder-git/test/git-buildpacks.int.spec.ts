import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Actor } from '@svc/core';
import { FakeBuildpackCatalog, FakeSourceCompiler } from '@svc/core/testing';
import { GitServer, loadOrCreateHostKey } from '@svc/builder-git';
import { FakeController } from './support/core';
import { WorkingCopy, keyPair, run, type KeyPair } from './support/git-client';

jest.setTimeout(60_000);

/** Pushes compiled with buildpacks: the core decides, the git server reports (real git and ssh, core on fakes). */
describe('GitServer with buildpacks', () => {
  let root: string;
  let controller: FakeController;
  let compiler: FakeSourceCompiler;
  let server: GitServer;
  let port: number;
  let alice: Actor;
  let aliceKey: KeyPair;
  let copies = 0;

  const builds = () => join(root, 'builds');
  const headOf = async (app: string): Promise<string | null> => {
    const outcome = await run('git', ['--git-dir', join(root, 'git', `${app}.git`), 'rev-parse', '--verify', '--quiet', 'refs/heads/main']);
    return outcome.code === 0 ? outcome.stdout.trim() : null;
  };
  const workingCopy = async (app: string): Promise<WorkingCopy> => {
    copies += 1;
    const copy = await WorkingCopy.init(join(root, `copy-${copies}`), join(root, `home-${copies}`), aliceKey, 'main');
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${port}/${app}.git`]);
    return copy;
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-git-buildpacks-'));
    compiler = new FakeSourceCompiler().behave('node', {
      // Detects from the checkout, as bin/detect does: the commit's files are there when the build opens.
      detect: (request) => (existsSync(join(request.directory, 'package.json')) ? 'Node.js' : null),
      compileOutput: ['-----> Installing node'],
      release: 'default_process_types:\n  web: npm start\n',
    });
    controller = new FakeController({}, { compiler, buildpacks: new FakeBuildpackCatalog() });
    await controller.user('root');
    alice = await controller.user('alice');
    aliceKey = await keyPair(root, 'alice');
    await controller.useCases.addKey.execute(alice, { id: 'laptop', public: aliceKey.publicKey });
    server = new GitServer({
      useCases: controller.useCases,
      repositories: join(root, 'git'),
      builds: builds(),
      hostKey: loadOrCreateHostKey(join(root, 'ssh_host_ed25519_key')).privateKey,
      appUrl: () => null,
    });
    port = (await server.listen(0, '127.0.0.1')).port;
  });

  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('takes a push without Procfile or Dockerfile to the core, which compiles it in the checkout and releases the buildpack\'s process types', async () => {
    await controller.useCases.createApp.execute(alice, { id: 'nodeonly' });
    const copy = await workingCopy('nodeonly');
    const sha = await copy.commit({ 'package.json': '{"scripts":{"start":"node server.js"}}\n', 'server.js': 'require("http").createServer().listen(process.env.PORT)\n' });

    const outcome = await copy.git(['push', 'svc', 'main']);

    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toContain('remote:        No Procfile: the buildpack decides what runs');
    expect(outcome.stderr).toContain('remote: -----> Compiling with buildpacks, then releasing and starting processes');
    expect(outcome.stderr).toContain('remote:        Detected Node.js');
    expect(outcome.stderr).toContain('remote:        -----> Installing node');
    expect(outcome.stderr).toContain('remote: -----> Released v2 (web=1)');
    const workdir = join(builds(), 'nodeonly', sha);
    expect(compiler.calls[0]).toMatchObject({ step: 'open', request: { app: 'nodeonly', directory: workdir } });
    expect(controller.uow.snapshot().builds).toEqual([expect.objectContaining({ app: 'nodeonly', sha, procfile: { web: 'npm start' }, workdir })]);
    expect(readdirSync(workdir).sort()).toEqual(['package.json', 'server.js']);
    expect(await headOf('nodeonly')).toBe(sha);
  });

  it('refuses a push no buildpack detects with what each looks for, moving no branch and keeping no checkout', async () => {
    await controller.useCases.createApp.execute(alice, { id: 'readme' });
    const copy = await workingCopy('readme');
    await copy.commit({ 'README.md': '# nothing to run\n' });

    const outcome = await copy.git(['push', 'svc', 'main']);

    expect(outcome.code).not.toBe(0);
    expect(outcome.stderr).toContain('remote: !      Deploy failed; no release was made and the branch did not move.');
    expect(outcome.stderr).toContain('remote: !      No buildpack detected this app: node needs package.json, plain needs a Procfile.');
    expect(outcome.stderr).toContain('[remote rejected] main -> main (pre-receive hook declined)');
    expect(controller.releaseVersions('readme')).toEqual([1]);
    expect(await headOf('readme')).toBeNull();
    expect(existsSync(join(builds(), 'readme')) ? readdirSync(join(builds(), 'readme')) : []).toEqual([]);
  });

});

/** A controller whose builds cannot run: the push is refused before anything is checked out (real git and ssh, core on fakes). */
describe('GitServer when builds cannot run', () => {
  const reason = 'buildpack builds cannot run: the build network svc-build could not be prepared (iptables -N SVC-HOST-svc-build0: spawn iptables ENOENT)';
  let root: string;
  let controller: FakeController;
  let compiler: FakeSourceCompiler;
  let server: GitServer;
  let copy: WorkingCopy;

  const headOf = async (): Promise<string | null> => {
    const outcome = await run('git', ['--git-dir', join(root, 'git', 'blocked.git'), 'rev-parse', '--verify', '--quiet', 'refs/heads/main']);
    return outcome.code === 0 ? outcome.stdout.trim() : null;
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-git-blocked-'));
    compiler = new FakeSourceCompiler().cannotRun(reason).behave('node', { detect: 'Node.js', release: 'default_process_types:\n  web: npm start\n' });
    controller = new FakeController({}, { compiler, buildpacks: new FakeBuildpackCatalog() });
    await controller.user('root');
    const alice = await controller.user('alice');
    const key = await keyPair(root, 'alice');
    await controller.useCases.addKey.execute(alice, { id: 'laptop', public: key.publicKey });
    await controller.useCases.createApp.execute(alice, { id: 'blocked' });
    server = new GitServer({
      useCases: controller.useCases,
      repositories: join(root, 'git'),
      builds: join(root, 'builds'),
      hostKey: loadOrCreateHostKey(join(root, 'ssh_host_ed25519_key')).privateKey,
      appUrl: () => null,
    });
    const port = (await server.listen(0, '127.0.0.1')).port;
    copy = await WorkingCopy.init(join(root, 'copy'), join(root, 'home'), key, 'main');
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${port}/blocked.git`]);
  });

  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('refuses a push at once, before any checkout, with the reason builds cannot run; the same push goes through once they can', async () => {
    const sha = await copy.commit({ 'package.json': '{}\n' });

    const refused = await copy.git(['push', 'svc', 'main']);

    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`remote: !      ${reason}`);
    expect(refused.stderr).toContain('remote: !      No build was made and the branch did not move');
    expect(refused.stderr).not.toContain('Checked out');
    expect(refused.stderr).toContain('[remote rejected] main -> main (pre-receive hook declined)');
    expect(compiler.steps()).toEqual([]);
    expect(existsSync(join(root, 'builds', 'blocked')) ? readdirSync(join(root, 'builds', 'blocked')) : []).toEqual([]);
    expect(controller.releaseVersions('blocked')).toEqual([1]);
    expect(await headOf()).toBeNull();

    // Fixed meanwhile: a refusal is not kept, the next push asks again.
    compiler.cannotRun(null);
    const again = await copy.git(['push', 'svc', 'main']);

    expect(again.code).toBe(0);
    expect(again.stderr).toContain('remote: -----> Released v2');
    expect(await headOf()).toBe(sha);
  });
});
