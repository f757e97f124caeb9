import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Actor } from '@svc/core';
import { GitServer, loadOrCreateHostKey } from '@svc/builder-git';
import { FakeController } from './support/core';
import { WorkingCopy, keyPair, nodeApp, run, sshArgs, type KeyPair } from './support/git-client';

jest.setTimeout(60_000);

/** The git server on the core's fakes, with real git and ssh clients. */
describe('GitServer (real git and ssh clients, core on fakes)', () => {
  let root: string;
  let controller: FakeController;
  let server: GitServer;
  let port: number;
  let alice: Actor;
  let bob: Actor;
  let carol: Actor;
  let aliceKey: KeyPair;
  let bobKey: KeyPair;
  let carolKey: KeyPair;
  let copies = 0;

  const repositories = () => join(root, 'git');
  const builds = () => join(root, 'builds');
  const headOf = async (app: string, ref = 'refs/heads/main'): Promise<string | null> => {
    const outcome = await run('git', ['--git-dir', join(repositories(), `${app}.git`), 'rev-parse', '--verify', '--quiet', ref]);
    return outcome.code === 0 ? outcome.stdout.trim() : null;
  };
  const workingCopy = async (key: KeyPair, app: string, branch = 'main'): Promise<WorkingCopy> => {
    copies += 1;
    const copy = await WorkingCopy.init(join(root, `copy-${copies}`), join(root, `home-${copies}`), key, branch);
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${port}/${app}.git`]);
    return copy;
  };
  const ssh = (key: KeyPair, ...command: string[]) => run('ssh', [...sshArgs(key, port), 'git@127.0.0.1', ...command]);
  const appWithOwner = async (app: string): Promise<void> => {
    await controller.useCases.createApp.execute(alice, { id: app });
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-git-int-'));
    controller = new FakeController({ buildRetention: 2 });
    // The first user is the administrator; alice, bob and carol are not.
    await controller.user('root');
    alice = await controller.user('alice');
    bob = await controller.user('bob');
    carol = await controller.user('carol');
    aliceKey = await keyPair(root, 'alice');
    bobKey = await keyPair(root, 'bob');
    carolKey = await keyPair(root, 'carol');
    await controller.useCases.addKey.execute(alice, { id: 'laptop', public: aliceKey.publicKey });
    await controller.useCases.addKey.execute(bob, { id: 'laptop', public: bobKey.publicKey });
    await controller.useCases.addKey.execute(carol, { id: 'laptop', public: carolKey.publicKey });
    server = new GitServer({
      useCases: controller.useCases,
      repositories: repositories(),
      builds: builds(),
      hostKey: loadOrCreateHostKey(join(root, 'ssh_host_ed25519_key')).privateKey,
      appUrl: (app) => `http://${app}.localhost:8080`,
    });
    port = (await server.listen(0, '127.0.0.1')).port;
  });

  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  describe('a push to main', () => {
    let copy: WorkingCopy;
    let first: string;

    beforeAll(async () => {
      await appWithOwner('hello');
      copy = await workingCopy(aliceKey, 'hello');
      first = await copy.commit(nodeApp('hello from v1'), 'first');
    });

    it('builds the commit, releases it and streams progress as remote: lines', async () => {
      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain(`remote: -----> Building hello from ${first.slice(0, 7)} (main), pushed by alice`);
      expect(outcome.stderr).toContain('remote:        Procfile declares web');
      expect(outcome.stderr).toContain('remote: -----> Released v2 (web=1)');
      expect(outcome.stderr).toContain('remote:        http://hello.localhost:8080');
      const builds = controller.uow.snapshot().builds.filter((b) => b.app === 'hello');
      expect(builds).toEqual([
        expect.objectContaining({
          image: `hello:git-${first.slice(0, 7)}`,
          sha: first,
          procfile: { web: 'node server.js' },
          dockerfile: '',
          owner: 'alice',
          workdir: join(root, 'builds', 'hello', first),
        }),
      ]);
      expect(controller.releaseVersions('hello')).toEqual([1, 2]);
      expect(await headOf('hello')).toBe(first);
    });

    it('starts web=1 in the checkout of the commit', () => {
      const started = controller.scheduler.started().filter((spec) => spec.app === 'hello');
      const workdir = join(root, 'builds', 'hello', first);

      expect(started).toEqual([expect.objectContaining({ type: 'web', num: 1, command: 'node server.js', workdir, release: 2 })]);
      expect(readFileSync(join(workdir, 'server.js'), 'utf8')).toContain('hello from v1');
      expect(readdirSync(workdir).sort()).toEqual(['Procfile', 'package.json', 'server.js']);
    });

    it('releases the next push as a new release in its own checkout', async () => {
      const second = await copy.commit(nodeApp('hello from v2'), 'second');

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain('remote: -----> Released v3 (web=1)');
      expect(controller.releaseVersions('hello')).toEqual([1, 2, 3]);
      const latest = controller.scheduler.running().filter((c) => c.spec.app === 'hello');
      expect(latest.map((c) => c.spec.workdir)).toEqual([join(root, 'builds', 'hello', second)]);
      expect(readFileSync(join(root, 'builds', 'hello', second, 'server.js'), 'utf8')).toContain('hello from v2');
      // Both builds are within BUILD_RETENTION (2): both checkouts stay.
      expect(readdirSync(join(root, 'builds', 'hello')).sort()).toEqual([first, second].sort());
    });

    it('removes the checkouts that no release can return to any more', async () => {
      const third = await copy.commit(nodeApp('hello from v3'), 'third');

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain('Removed 1 old build directory');
      expect(existsSync(join(root, 'builds', 'hello', first))).toBe(false);
      expect(readdirSync(join(root, 'builds', 'hello'))).toContain(third);
      const rollback = await controller.useCases.rollback.execute(alice, 'hello', { version: 2 }).catch((error: Error) => error);
      expect(rollback).toMatchObject({ code: 'RELEASE.SOURCE_REMOVED' });
    });

    it('rolls back to a kept release, which runs its checkout again', async () => {
      const before = controller.uow.snapshot().builds.find((b) => b.app === 'hello' && b.workdir?.endsWith((readdirSync(join(root, 'builds', 'hello')).sort()[0] as string)));
      const kept = controller.uow.snapshot().releases.filter((r) => r.app === 'hello' && r.version === 3)[0];

      const published = await controller.useCases.rollback.execute(alice, 'hello', { version: 3 });

      expect(before).toBeDefined();
      expect(published.build?.uuid).toBe(kept?.build);
      const running = controller.scheduler.running().filter((c) => c.spec.app === 'hello');
      expect(running.map((c) => c.spec.workdir)).toEqual([published.build?.workdir]);
      expect(existsSync(published.build?.workdir ?? '')).toBe(true);
    });

    it('does not deploy a push to another branch', async () => {
      const releases = controller.releaseVersions('hello');
      await copy.expectGit(['checkout', '--quiet', '-b', 'feature']);
      await copy.commit({ 'notes.txt': 'wip\n' }, 'wip');

      const outcome = await copy.git(['push', 'svc', 'feature']);
      await copy.expectGit(['checkout', '--quiet', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain('refs/heads/feature stored; only pushes to main deploy.');
      expect(controller.releaseVersions('hello')).toEqual(releases);
      expect(await headOf('hello', 'refs/heads/feature')).not.toBeNull();
    });

    it('refuses to delete the deployed branch', async () => {
      const head = await headOf('hello');

      const outcome = await copy.git(['push', 'svc', ':main']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('main cannot be deleted: it is the branch hello is deployed from.');
      expect(await headOf('hello')).toBe(head);
    });
  });

  describe('a push that cannot be released', () => {
    it('is refused without a Procfile or a Dockerfile, with an explanation, and changes nothing', async () => {
      await appWithOwner('empty');
      const copy = await workingCopy(aliceKey, 'empty');
      await copy.commit({ 'README.md': '# nothing to run\n' });

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('remote: !      The pushed commit has neither a Procfile nor a Dockerfile');
      expect(outcome.stderr).toContain('[remote rejected] main -> main (pre-receive hook declined)');
      expect(controller.releaseVersions('empty')).toEqual([1]);
      expect(await headOf('empty')).toBeNull();
      expect(existsSync(join(builds(), 'empty')) ? readdirSync(join(builds(), 'empty')) : []).toEqual([]);
    });

    it('is refused with the lines of a broken Procfile', async () => {
      await appWithOwner('broken');
      const copy = await workingCopy(aliceKey, 'broken');
      await copy.commit({ Procfile: 'web node server.js\n' });

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('remote: !      Procfile line 1: expected "<process type>: <command>"');
      expect(controller.releaseVersions('broken')).toEqual([1]);
    });

    it('is refused when the deploy fails: it says why, keeps no release, and the branch does not move', async () => {
      await appWithOwner('flaky');
      const copy = await workingCopy(aliceKey, 'flaky');
      const good = await copy.commit(nodeApp('ok'));
      await copy.expectGit(['push', '--quiet', 'svc', 'main']);
      const bad = await copy.commit(nodeApp('never released'));
      controller.scheduler.failStarts(1, new Error('no port left'));

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('remote: !      Deploy failed; no release was made and the branch did not move.');
      expect(outcome.stderr).toContain('no port left');
      expect(controller.releaseVersions('flaky')).toEqual([1, 2]);
      expect(await headOf('flaky')).toBe(good);
      expect(existsSync(join(builds(), 'flaky', bad))).toBe(false);
      expect(controller.scheduler.running().filter((c) => c.spec.app === 'flaky').map((c) => c.spec.release)).toEqual([2]);
    });

    it('builds a Dockerfile-only commit with an empty Procfile', async () => {
      await appWithOwner('docker');
      const copy = await workingCopy(aliceKey, 'docker');
      const sha = await copy.commit({ Dockerfile: 'FROM node:20\nCMD ["node", "app.js"]\n' });

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(controller.uow.snapshot().builds.filter((b) => b.app === 'docker')).toEqual([
        expect.objectContaining({ sha, procfile: {}, dockerfile: 'FROM node:20\nCMD ["node", "app.js"]\n' }),
      ]);
    });
  });

  describe('access', () => {
    beforeAll(async () => {
      await appWithOwner('shared');
      await controller.useCases.grantPermission.execute(alice, 'shared', { username: 'bob' });
      const copy = await workingCopy(aliceKey, 'shared');
      await copy.commit(nodeApp('shared'));
      await copy.expectGit(['push', '--quiet', 'svc', 'main']);
    });

    it('lets a collaborator clone, fetch and push', async () => {
      copies += 1;
      const clone = await WorkingCopy.init(join(root, `copy-${copies}`), join(root, `home-${copies}`), bobKey);
      await clone.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${port}/shared`]);
      await clone.expectGit(['fetch', '--quiet', 'svc']);
      await clone.expectGit(['checkout', '--quiet', '-B', 'main', 'svc/main']);
      expect(readFileSync(join(clone.dir, 'server.js'), 'utf8')).toContain('shared');

      await clone.commit({ 'CHANGELOG.md': 'bob was here\n' });
      const outcome = await clone.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain('pushed by bob');
      expect(controller.uow.snapshot().releases.filter((r) => r.app === 'shared').map((r) => r.summary).at(-1)).toMatch(/^bob deployed /);
    });

    it('lets the collaborator clone with git clone, also in the scp-like syntax', async () => {
      copies += 1;
      const home = join(root, `home-${copies}`);
      const target = join(root, `clone-${copies}`);
      const copy = new WorkingCopy(root, home, bobKey);

      const outcome = await copy.git(['clone', '--quiet', `git@127.0.0.1:shared.git`, target], {
        GIT_SSH_COMMAND: ['ssh', ...sshArgs(bobKey, port)].join(' '),
      });

      expect(outcome.code).toBe(0);
      expect(readFileSync(join(target, 'Procfile'), 'utf8')).toBe('web: node server.js\n');
    });

    it('passes GIT_PROTOCOL through, so fetches speak protocol version 2', async () => {
      const copy = await workingCopy(bobKey, 'shared');

      const outcome = await copy.git(['-c', 'protocol.version=2', 'ls-remote', 'svc'], { GIT_TRACE_PACKET: '1' });

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toMatch(/ls-remote< version 2/);
      expect(outcome.stdout).toMatch(/^[0-9a-f]{40}\trefs\/heads\/main$/m);
    });

    it('refuses a stranger’s push with a clear message and a non-zero status', async () => {
      const copy = await workingCopy(carolKey, 'shared');
      await copy.commit(nodeApp('carol was here'));
      const head = await headOf('shared');

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain(
        "svc: shared.git: no such app, or carol may not use it. Only the app's owner, its collaborators and administrators may push to it or fetch from it.",
      );
      expect(await headOf('shared')).toBe(head);
    });

    it('refuses a stranger’s clone the same way as a clone of an app that does not exist', async () => {
      const stranger = await ssh(carolKey, "git-upload-pack 'shared.git'");
      const missing = await ssh(carolKey, "git-upload-pack 'nothing-here.git'");

      expect(stranger.code).toBe(1);
      expect(stranger.stderr).toContain('shared.git: no such app, or carol may not use it.');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('nothing-here.git: no such app, or carol may not use it.');
    });

    it('lets an administrator in', async () => {
      const rootKey = await keyPair(root, 'root');
      const admin = { user: (await controller.uow.repositories.users.findByUsername('root'))!, tokenHash: '' };
      await controller.useCases.addKey.execute(admin, { id: 'k', public: rootKey.publicKey });

      const outcome = await run('git', ['ls-remote', `ssh://git@127.0.0.1:${port}/shared.git`], {
        env: { PATH: process.env.PATH, HOME: root, GIT_SSH_COMMAND: ['ssh', ...sshArgs(rootKey, port)].join(' ') },
      });

      expect(outcome.code).toBe(0);
      expect(outcome.stdout).toContain('refs/heads/main');
    });

    it('refuses a key nobody registered', async () => {
      const unknown = await keyPair(root, 'unknown');
      const copy = await workingCopy(unknown, 'shared');

      const outcome = await copy.git(['ls-remote', 'svc']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('Permission denied (publickey)');
    });

    it('offers no password authentication', async () => {
      const outcome = await run('ssh', [
        '-F', '/dev/null', '-p', String(port), '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
        '-o', 'BatchMode=yes', '-o', 'PubkeyAuthentication=no', 'git@127.0.0.1', 'git-upload-pack', 'shared.git',
      ]);

      expect(outcome.code).toBe(255);
      expect(outcome.stderr).toContain('Permission denied (publickey)');
    });

    it('takes access away as soon as a key is deleted, on a server that keeps running', async () => {
      const dave = await controller.user('dave');
      const daveKey = await keyPair(root, 'dave');
      await controller.useCases.addKey.execute(dave, { id: 'laptop', public: daveKey.publicKey });
      await controller.useCases.grantPermission.execute(alice, 'shared', { username: 'dave' });
      const copy = await workingCopy(daveKey, 'shared');
      expect((await copy.git(['ls-remote', 'svc'])).code).toBe(0);

      await controller.useCases.removeKey.execute(dave, 'laptop');
      const outcome = await copy.git(['ls-remote', 'svc']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('Permission denied (publickey)');
    });

    it('takes access away as soon as the account is cancelled', async () => {
      const erin = await controller.user('erin');
      const erinKey = await keyPair(root, 'erin');
      await controller.useCases.addKey.execute(erin, { id: 'laptop', public: erinKey.publicKey });
      await controller.useCases.grantPermission.execute(alice, 'shared', { username: 'erin' });
      const copy = await workingCopy(erinKey, 'shared');
      expect((await copy.git(['ls-remote', 'svc'])).code).toBe(0);

      await controller.useCases.cancelAccount.execute(erin, undefined, '1.7');
      const outcome = await copy.git(['ls-remote', 'svc']);

      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('Permission denied (publickey)');
    });

    it('takes access away from a collaborator whose permission was revoked', async () => {
      await controller.useCases.revokePermission.execute(alice, 'shared', 'bob');

      const outcome = await ssh(bobKey, "git-upload-pack 'shared.git'");

      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain('shared.git: no such app, or bob may not use it.');
      await controller.useCases.grantPermission.execute(alice, 'shared', { username: 'bob' });
    });

    it.each([
      ['ls -la', '"ls -la" is not allowed: this server only accepts git push, git fetch and git clone'],
      ["git-upload-archive 'shared.git'", 'is not allowed'],
      ["git-receive-pack '../etc/passwd'", '"../etc/passwd" is not an app\'s repository'],
      ["git-upload-pack '/shared.git/../../x.git'", 'is not an app\'s repository'],
    ])('refuses the command %p with a message and exit status 1', async (command, message) => {
      const outcome = await ssh(aliceKey, command);

      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain(message);
    });

    it('refuses a shell with a greeting that says what the server is for', async () => {
      const outcome = await run('ssh', [...sshArgs(aliceKey, port), '-T', 'git@127.0.0.1']);

      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain('Hi alice! You are authenticated, but this server only serves git.');
    });
  });

  describe('the first push of master', () => {
    it('deploys master and makes it the branch that clones check out', async () => {
      await appWithOwner('legacy');
      const copy = await workingCopy(aliceKey, 'legacy', 'master');
      const sha = await copy.commit(nodeApp('legacy'));

      const outcome = await copy.git(['push', 'svc', 'master']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toContain(`Building legacy from ${sha.slice(0, 7)} (master)`);
      const head = await run('git', ['--git-dir', join(repositories(), 'legacy.git'), 'symbolic-ref', 'HEAD']);
      expect(head.stdout.trim()).toBe('refs/heads/master');
    });
  });

  describe('a re-created app of the same name', () => {
    it('starts from an empty repository: it never sees the deleted app’s history', async () => {
      await appWithOwner('reborn');
      const copy = await workingCopy(aliceKey, 'reborn');
      await copy.commit(nodeApp('first life'));
      await copy.expectGit(['push', '--quiet', 'svc', 'main']);
      await controller.useCases.deleteApp.execute(alice, 'reborn');
      await controller.useCases.createApp.execute(bob, { id: 'reborn' });

      const refs = await run('git', ['ls-remote', `ssh://git@127.0.0.1:${port}/reborn.git`], {
        env: { PATH: process.env.PATH, HOME: root, GIT_SSH_COMMAND: ['ssh', ...sshArgs(bobKey, port)].join(' ') },
      });

      expect(refs.code).toBe(0);
      expect(refs.stdout).toBe('');
      expect(existsSync(join(builds(), 'reborn'))).toBe(false);
    });
  });
});
