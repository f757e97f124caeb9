import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { generateEd25519Pair } from '@svc/builder-git';
import { startTestServer, type TestServer } from '../../server/test/support';
import { ecdsaPair } from '../../server/test/support/certs';
import { run } from '../../builder-git/test/support/git-client';
import { main } from '../src/program';
import { CliRunner, compileClient } from './support/cli';

// Each step spawns the client several times against a real controller: generous on a loaded machine.
jest.setTimeout(300_000);

/** Every command of the client, as `svc --help` lists them. */
const COMMANDS = [
  'login', 'register', 'logout', 'whoami', 'profiles', 'profiles:use',
  'apps', 'apps:create', 'apps:info', 'apps:destroy', 'apps:transfer',
  'config', 'config:set', 'config:unset', 'config:pull', 'config:push',
  'limits', 'limits:set', 'limits:unset', 'tags', 'tags:set', 'tags:unset',
  'builds', 'builds:create', 'releases', 'releases:info', 'releases:rollback',
  'ps', 'ps:scale', 'ps:restart', 'logs', 'run',
  'domains', 'domains:add', 'domains:remove', 'certs', 'certs:info', 'certs:add', 'certs:remove',
  'keys', 'keys:add', 'keys:remove', 'perms', 'perms:create', 'perms:delete', 'users',
  'tls', 'tls:redirect',
  'events', 'webhooks', 'webhooks:add', 'webhooks:info', 'webhooks:remove', 'webhooks:deliveries',
];

/** A tiny web app, as a developer would push it. */
const APP_FILES: Record<string, string> = {
  Procfile: 'web: node server.js\n',
  'server.js':
    "require('node:http').createServer((q, s) => s.end('hello from ' + process.env.SVC_RELEASE + '\\n')).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));\n",
};

async function inProcess(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk: Buffer, _enc, done) {
        append(chunk.toString('utf8'));
        done();
      },
    });
  const io = { out: sink((s) => (out += s)), err: sink((s) => (err += s)), in: process.stdin };
  const code = await main(['node', 'svc', ...args], io, { HOME: '/nonexistent' });
  return { code, out, err };
}

describe('svc, the command-line client, against a running controller', () => {
  let server: TestServer;
  let build: { main: string; remove: () => void };
  let root: string;
  let home: string;
  let checkout: string;
  let svc: CliRunner;
  let gitEnv: NodeJS.ProcessEnv;
  // A port range no other suite uses (git push: 30000-39999, the router: 44000, the scheduler: 43000).
  const ports = 50000 + Math.floor(Math.random() * 20) * 200;

  const git = (args: string[]): string => execFileSync('git', args, { cwd: checkout, env: gitEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  beforeAll(async () => {
    build = compileClient();
    root = await mkdtemp(join(tmpdir(), 'svc-cli-e2e-'));
    home = join(root, 'home');
    checkout = join(root, 'hello');
    await mkdir(join(home, '.ssh'), { recursive: true, mode: 0o700 });
    await mkdir(checkout);
    const pair = generateEd25519Pair('alice@laptop');
    await writeFile(join(home, '.ssh', 'id_ed25519'), pair.private, { mode: 0o600 });
    await writeFile(join(home, '.ssh', 'id_ed25519.pub'), `${pair.public}\n`);
    await mkdir(join(root, 'data'));
    server = await startTestServer(
      { dataDir: join(root, 'data') },
      { SCHEDULER: 'process', GIT_SSH_PORT: '0', ROUTER_PORT: '0', PROCESS_PORT_RANGE: `${ports}-${ports + 199}` },
    );
    gitEnv = {
      PATH: process.env.PATH,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'Dev',
      GIT_AUTHOR_EMAIL: 'dev@example.com',
      GIT_COMMITTER_NAME: 'Dev',
      GIT_COMMITTER_EMAIL: 'dev@example.com',
      GIT_SSH_COMMAND: `ssh -F /dev/null -i ${join(home, '.ssh', 'id_ed25519')} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes -o BatchMode=yes -o LogLevel=ERROR`,
      GIT_TERMINAL_PROMPT: '0',
      LC_ALL: 'C',
    };
    svc = new CliRunner(build.main, { ...gitEnv, SVC_GIT_PORT: String(server.gitPort), SVC_ROUTER_PORT: String(server.routerPort) });
    git(['init', '--quiet', '--initial-branch=main']);
  });

  afterAll(async () => {
    await server?.close();
    build?.remove();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  describe('usage', () => {
    it.each(COMMANDS)('`svc %s --help` explains the command and exits 0', async (name) => {
      const { code, out } = await inProcess([name, '--help']);
      expect(code).toBe(0);
      expect(out).toContain(`Usage: svc ${name}`);
    });

    it('`svc --help` lists every command and the exit codes', async () => {
      const { code, out } = await inProcess(['--help']);
      expect(code).toBe(0);
      for (const name of COMMANDS) expect(out).toMatch(new RegExp(`^  ${name}[ |]`, 'm'));
      expect(out).toContain('Exit codes');
    });

    it('an unknown command or a missing argument is a usage error (exit 2)', async () => {
      const unknown = await svc.run(['apps:creat']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('apps:create');
      expect((await svc.run(['config:set'])).code).toBe(2);
    });

    it('an app command before logging in exits 3 and says to log in', async () => {
      const outcome = await svc.run(['apps']);
      expect(outcome.code).toBe(3);
      expect(outcome.stderr).toMatch(/svc login/);
    });

    it('an unreachable controller exits 4', async () => {
      // A port that was free a moment ago: nothing listens there.
      const closed = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as AddressInfo;
          probe.close(() => resolve(port));
        });
      });
      const outcome = await svc.with({ SVC_URL: `http://127.0.0.1:${closed}`, SVC_TOKEN: 'x'.repeat(40) }).run(['apps']);
      expect(outcome.code).toBe(4);
      expect(outcome.stderr).toBe(`svc: cannot reach the controller at http://127.0.0.1:${closed}: ECONNREFUSED\n`);
    });
  });

  describe('accounts', () => {
    it('register creates the account and logs in; the client file is private (0600)', async () => {
      const admin = await svc.run(['register', server.url, '-u', 'root', '-p', 'root-Secret1', '-e', 'root@example.com', '--profile', 'admin']);
      expect(admin.code).toBe(0);
      const alice = await svc.ok(['register', server.url, '-u', 'alice', '-p', 'alice-Secret1', '-e', 'alice@example.com']);
      expect(alice).toContain('Registered alice');
      const file = join(home, '.svc', 'client.json');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const saved = JSON.parse(await readFile(file, 'utf8')) as { current: string; profiles: Record<string, { token: string; username: string }> };
      expect(saved.current).toBe('default');
      expect(saved.profiles.default?.username).toBe('alice');
      expect(saved.profiles.admin?.username).toBe('root');
      expect(saved.profiles.default?.token).toMatch(/^[0-9a-f]{40}$/);
    });

    it('whoami checks the token with the controller', async () => {
      expect(await svc.ok(['whoami'])).toContain(`alice at ${server.url}`);
      expect(await svc.json(['whoami', '--profile', 'admin'])).toEqual({ username: 'root', url: server.url, profile: 'admin' });
    });

    it('a wrong password exits 1 with the server\'s reason', async () => {
      const outcome = await svc.run(['login', server.url, '-u', 'alice', '-p', 'wrong', '--profile', 'scratch']);
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain('Unable to log in with provided credentials.');
    });

    it('logout forgets the token; login brings it back; profiles lists them', async () => {
      await svc.ok(['logout', '--profile', 'admin']);
      expect((await svc.run(['whoami', '--profile', 'admin'])).code).toBe(3);
      await svc.ok(['login', '-u', 'root', '-p', 'root-Secret1', '--profile', 'admin']);
      expect(await svc.ok(['whoami', '--profile', 'admin'])).toContain('root');
      // A profile named on the command line does not become the current one; profiles:use switches.
      await svc.ok(['profiles:use', 'admin']);
      expect(await svc.ok(['whoami'])).toContain('root');
      await svc.ok(['profiles:use', 'default']);
      const profiles = await svc.ok(['profiles']);
      expect(profiles).toMatch(/\* default/);
      expect(profiles).toMatch(/admin/);
    });

    it('SVC_URL and SVC_TOKEN override the profile', async () => {
      const token = (JSON.parse(await readFile(join(home, '.svc', 'client.json'), 'utf8')) as { profiles: { admin: { token: string } } }).profiles.admin.token;
      const out = await svc.with({ SVC_CONFIG: join(root, 'none.json'), SVC_URL: server.url, SVC_TOKEN: token }).ok(['users']);
      expect(out).toMatch(/root/);
    });

    it('users lists every user for an administrator and is refused to others (exit 1, the server\'s reason)', async () => {
      const users = await svc.json<Array<{ username: string }>>(['users', '--profile', 'admin']);
      expect(users.map((u) => u.username).sort()).toEqual(['alice', 'root']);
      const refused = await svc.run(['users']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^svc: .*permission/im);
    });

    it('keys:add reads ~/.ssh/*.pub; keys lists it', async () => {
      expect(await svc.ok(['keys:add'])).toContain('Added key alice@laptop');
      const keys = await svc.json<Array<{ id: string; fingerprint: string }>>(['keys']);
      expect(keys).toEqual([expect.objectContaining({ id: 'alice@laptop', fingerprint: expect.stringMatching(/^SHA256:/) })]);
    });
  });

  describe('an app, from git push to rollback', () => {
    it('apps:create inside a checkout creates the app and adds the svc git remote', async () => {
      const out = await svc.ok(['apps:create', 'hello'], { cwd: checkout });
      expect(out).toContain('Created hello');
      expect(git(['remote', 'get-url', 'svc']).trim()).toBe(`ssh://git@127.0.0.1:${server.gitPort}/hello.git`);
      const apps = await svc.json<Array<{ id: string; owner: string }>>(['apps']);
      expect(apps).toEqual([expect.objectContaining({ id: 'hello', owner: 'alice' })]);
      // The API's url is the host name; the client adds the router's port (not 80 here).
      expect(await svc.ok(['apps'])).toMatch(new RegExp(`^APP\\s+OWNER\\s+URL\\nhello\\s+alice\\s+http://hello\\.localhost:${server.routerPort}$`, 'm'));
      expect(out).toContain(`Created hello: http://hello.localhost:${server.routerPort}`);
    });

    it('git push through that remote deploys the app', async () => {
      for (const [path, content] of Object.entries(APP_FILES)) await writeFile(join(checkout, path), content);
      git(['add', '--all']);
      git(['commit', '--quiet', '-m', 'first']);
      // Asynchronously: the controller answering the push runs in this process.
      const pushed = await run('git', ['push', 'svc', 'main'], { cwd: checkout, env: gitEnv, timeoutMs: 120_000 });
      expect({ code: pushed.code, stderr: pushed.stderr }).toEqual({ code: 0, stderr: expect.stringContaining('main -> main') });
      const info = await svc.json<{ app: { structure: Record<string, number> }; containers: Array<{ type: string; state: string }> }>(['apps:info'], { cwd: checkout });
      expect(info.app.structure).toEqual({ web: 1 });
      expect(info.containers).toEqual([expect.objectContaining({ type: 'web', state: 'up' })]);
      expect(await svc.ok(['apps:info'], { cwd: checkout })).toMatch(/web\.1\s+up\s+v2/);
    });

    it('logs prints the last lines (-n) and --follow streams new ones', async () => {
      const last = await svc.ok(['logs', '-n', '1'], { cwd: checkout });
      expect(last.trim().split('\n')).toHaveLength(1);

      const follower = svc.spawn(['logs', '--follow', '-n', '1'], checkout);
      let streamed = '';
      const seen = (text: string) =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`not streamed: ${text}; got:\n${streamed}`)), 60_000);
          const check = (): void => {
            if (streamed.includes(text)) {
              clearTimeout(timer);
              resolve();
            }
          };
          follower.stdout.on('data', check);
          check();
        });
      follower.stdout.on('data', (chunk: Buffer) => (streamed += chunk.toString('utf8')));
      try {
        await seen('\n');
        await svc.ok(['config:set', 'GREETING=hi'], { cwd: checkout });
        await seen('alice added GREETING');
      } finally {
        follower.kill('SIGTERM');
      }
      expect(streamed).toMatch(/svc\[api\]: alice added GREETING/);
    });

    it('run prints the output and exits with the command\'s exit code', async () => {
      const ok = await svc.run(['run', 'echo', '$GREETING', 'from', '$SVC_APP'], { cwd: checkout });
      expect(ok).toEqual(expect.objectContaining({ code: 0, stdout: 'hi from hello\n' }));
      const failed = await svc.run(['run', '--', 'sh', '-c', '"echo oops; exit 7"'], { cwd: checkout });
      expect(failed.code).toBe(7);
      expect(failed.stdout).toBe('oops\n');
      const scripted = await svc.run(['run', 'exit 3', '-a', 'hello', '--json']);
      expect(scripted.code).toBe(3);
      expect(JSON.parse(scripted.stdout)).toEqual({ rc: 3, output: '' });
    });

    it('ps:scale web=2 runs two web processes; ps lists them; ps:restart restarts one', async () => {
      // One line, not the table: `svc ps:scale web=2 && svc ps` prints the table once.
      const scaled = await svc.ok(['ps:scale', 'web=2'], { cwd: checkout });
      expect(scaled).toBe('Scaled hello: web=2 (now web.1 up, web.2 up)\n');
      const table = await svc.ok(['ps'], { cwd: checkout });
      expect(table.match(/^PROCESS/gm)).toHaveLength(1);
      expect(table).toMatch(/^web\.1\s+up\s+v\d+/m);
      expect(table).toMatch(/^web\.2\s+up\s+v\d+/m);
      const ps = await svc.json<Array<{ type: string; num: number }>>(['ps'], { cwd: checkout });
      expect(ps.map((c) => `${c.type}.${c.num}`)).toEqual(['web.1', 'web.2']);
      const restarted = await svc.json<Array<{ type: string; num: number }>>(['ps:restart', 'web.2'], { cwd: checkout });
      expect(restarted).toEqual([expect.objectContaining({ type: 'web', num: 2 })]);
      expect((await svc.run(['ps:scale', 'web=lots'], { cwd: checkout })).code).toBe(2);
      const refused = await svc.run(['ps:scale', 'worker=1'], { cwd: checkout });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^svc: .*worker/m);
    });

    it('config, config:unset, config:pull and config:push round trip through a .env file', async () => {
      await svc.ok(['config:set', 'DATABASE_URL=postgres://db/x', 'MOTTO=hello world'], { cwd: checkout });
      const config = await svc.json<{ values: Record<string, string> }>(['config'], { cwd: checkout });
      expect(config.values).toEqual(expect.objectContaining({ DATABASE_URL: 'postgres://db/x', MOTTO: 'hello world', SVC_APP: 'hello' }));
      expect(await svc.ok(['config', '--shell'], { cwd: checkout })).toContain('MOTTO="hello world"\n');

      await svc.ok(['config:pull'], { cwd: checkout });
      const pulled = await readFile(join(checkout, '.env'), 'utf8');
      expect(pulled).toBe('DATABASE_URL=postgres://db/x\nGREETING=hi\nMOTTO="hello world"\n');
      expect((await stat(join(checkout, '.env'))).mode & 0o777).toBe(0o600);

      await svc.ok(['config:unset', 'MOTTO', 'GREETING'], { cwd: checkout });
      expect(Object.keys((await svc.json<{ values: Record<string, string> }>(['config'], { cwd: checkout })).values).sort()).toEqual([
        'DATABASE_URL',
        'SVC_APP',
        'SVC_RELEASE',
      ]);

      await writeFile(join(checkout, '.env'), `${pulled}# a comment\nexport EXTRA='x y'\nSVC_APP=hello\n`);
      expect(await svc.ok(['config:push'], { cwd: checkout })).toMatch(/Pushed 4 variables on hello: release v\d+/);
      expect((await svc.json<{ values: Record<string, string> }>(['config'], { cwd: checkout })).values).toEqual(
        expect.objectContaining({ GREETING: 'hi', MOTTO: 'hello world', EXTRA: 'x y' }),
      );
    });

    it('refuses an invalid config change with the server\'s reason (exit 1)', async () => {
      const outcome = await svc.run(['config:set', 'SVC_APP=other'], { cwd: checkout });
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toBe('svc: values: SVC_APP is set by the platform and cannot be changed.\n');
    });

    it('limits and tags are set, listed and unset', async () => {
      await svc.ok(['limits:set', 'web=512M'], { cwd: checkout });
      await svc.ok(['limits:set', '--cpu', 'web=256'], { cwd: checkout });
      expect(await svc.json(['limits'], { cwd: checkout })).toEqual({ memory: { web: '512M' }, cpu: { web: 256 } });
      expect(await svc.ok(['limits'], { cwd: checkout })).toMatch(/web\s+512M\s+256/);
      await svc.ok(['limits:unset', '--cpu', 'web'], { cwd: checkout });
      expect(await svc.json(['limits'], { cwd: checkout })).toEqual({ memory: { web: '512M' }, cpu: {} });
      await svc.ok(['limits:unset', 'web'], { cwd: checkout });

      await svc.ok(['tags:set', 'environ=prod', 'rack=b2'], { cwd: checkout });
      expect(await svc.json(['tags'], { cwd: checkout })).toEqual({ environ: 'prod', rack: 'b2' });
      await svc.ok(['tags:unset', 'rack'], { cwd: checkout });
      expect(await svc.json(['tags'], { cwd: checkout })).toEqual({ environ: 'prod' });
    });

    it('releases lists them; releases:info shows one; releases:rollback rolls back to the git build', async () => {
      const releases = await svc.json<Array<{ version: number; summary: string }>>(['releases'], { cwd: checkout });
      expect(releases[0]?.version).toBe(releases.length);
      expect(releases.at(-1)).toEqual(expect.objectContaining({ version: 1, summary: 'alice created initial release' }));
      const info = await svc.ok(['releases:info', 'v2'], { cwd: checkout });
      expect(info).toMatch(/summary:\s+alice deployed [0-9a-f]{7}/);
      expect((await svc.run(['releases:info', 'v999'], { cwd: checkout })).code).toBe(1);

      const latest = releases[0]?.version ?? 0;
      const rolled = await svc.ok(['releases:rollback', 'v2'], { cwd: checkout });
      expect(rolled).toContain(`Rolled back hello to v2: release v${latest + 1}`);
      const [newest] = await svc.json<Array<{ summary: string }>>(['releases'], { cwd: checkout });
      expect(newest?.summary).toBe('alice rolled back to v2');
      expect((await svc.json<{ values: Record<string, string> }>(['config'], { cwd: checkout })).values).toEqual({ SVC_APP: 'hello', SVC_RELEASE: `v${latest + 1}` });

      // v1 has no build: the controller refuses (409) and the client prints why, exiting 1.
      const refused = await svc.run(['releases:rollback', 'v1'], { cwd: checkout });
      expect({ code: refused.code, stdout: refused.stdout, stderr: refused.stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr: `svc: Release v1 has no build: rolling back to it would stop every process of hello. Releases that can be rolled back to: v2 to v${latest + 1}.\n`,
      });
      expect(await svc.ok(['ps'], { cwd: checkout })).toMatch(new RegExp(`^web\\.1\\s+up\\s+v${latest + 1}`, 'm'));
    });

    it('a reader that closes the pipe early (`svc releases | head -3`) ends the client quietly', async () => {
      const child = svc.spawn(['releases', '-a', 'hello']);
      child.stdin.end();
      // The reader is gone before the client writes its first line: every write fails with EPIPE.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    });

    it('builds:create deploys an image with a Procfile; builds lists it', async () => {
      await svc.ok(['apps:create', 'imaged', '--no-remote']);
      const command = `node -e "require('http').createServer((q,s)=>s.end('ok')).listen(process.env.PORT)"`;
      const out = await svc.ok(['builds:create', 'example/web:1', '--procfile', JSON.stringify({ web: command }), '-a', 'imaged']);
      expect(out).toContain('Deployed example/web:1 to imaged: release v2');
      expect(await svc.json(['builds', '-a', 'imaged'])).toEqual([expect.objectContaining({ image: 'example/web:1', procfile: { web: command } })]);
      expect(await svc.json(['ps', '-a', 'imaged'])).toEqual([expect.objectContaining({ type: 'web', num: 1, state: 'up' })]);
    });
  });

  describe('domains, certificates, collaborators, transfer and destroy', () => {
    it('domains:add, domains, domains:remove', async () => {
      expect(await svc.ok(['domains:add', 'www.example.com'], { cwd: checkout })).toContain('Added www.example.com to hello');
      expect(await svc.json(['domains'], { cwd: checkout })).toEqual([expect.objectContaining({ domain: 'www.example.com' })]);
      await svc.ok(['domains:remove', 'www.example.com'], { cwd: checkout });
      expect(await svc.json(['domains'], { cwd: checkout })).toEqual([]);
      const bad = await svc.run(['domains:add', 'not a domain'], { cwd: checkout });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^svc: domain: /);
    });

    it('tls shows each name\'s TLS state; tls:redirect turns the HTTPS redirect on and off', async () => {
      await svc.ok(['domains:add', 'tls.example.com'], { cwd: checkout });
      const shown = await svc.ok(['tls'], { cwd: checkout });
      expect(shown).toMatch(/tls\.example\.com\s+none/);
      expect(shown).toContain('HTTPS redirect: off; automatic certificates: off');
      expect(await svc.json(['tls:redirect', 'on'], { cwd: checkout })).toMatchObject({ app: 'hello', https_redirect: true, automatic: false });
      expect((await svc.json<{ names: unknown[] }>(['tls'], { cwd: checkout })).names).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'tls.example.com', state: 'none' })]));
      await svc.ok(['tls:redirect', 'off'], { cwd: checkout });
      expect((await svc.run(['tls:redirect', 'maybe'], { cwd: checkout })).code).toBe(2);
      await svc.ok(['domains:remove', 'tls.example.com'], { cwd: checkout });
    });

    it('certs:add, certs, certs:info, certs:remove', async () => {
      const pair = ecdsaPair();
      await writeFile(join(root, 'cert.pem'), pair.certificate);
      await writeFile(join(root, 'key.pem'), pair.key);
      // A certificate is taken only for names of the caller's apps: its own names and the override.
      for (const domain of ['shop.example.com', 'ec.example.com', 'www.ec.example.com']) await svc.ok(['domains:add', domain], { cwd: checkout });
      const refused = await svc.run(['certs:add', join(root, 'cert.pem'), join(root, 'key.pem'), '--common-name', 'other.example.org']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('not a domain of an app you manage');
      const added = await svc.json<{ common_name: string }>(['certs:add', join(root, 'cert.pem'), join(root, 'key.pem'), '--common-name', 'shop.example.com']);
      expect(added.common_name).toBe('shop.example.com');
      expect(await svc.json(['certs'])).toEqual([expect.objectContaining({ common_name: 'shop.example.com' })]);
      expect(await svc.ok(['certs:info', 'shop.example.com'])).toMatch(/fingerprint:/);
      await svc.ok(['certs:remove', 'shop.example.com']);
      expect(await svc.json(['certs'])).toEqual([]);
      for (const domain of ['shop.example.com', 'ec.example.com', 'www.ec.example.com']) await svc.ok(['domains:remove', domain], { cwd: checkout });
    });

    it('perms:create and perms:delete share an app (sharing:* aliases too); --admin manages administrators', async () => {
      await svc.ok(['register', server.url, '-u', 'bob', '-p', 'bob-Secret1', '-e', 'bob@example.com', '--no-login']);
      await svc.ok(['perms:create', 'bob'], { cwd: checkout });
      expect(await svc.json(['perms'], { cwd: checkout })).toEqual(['bob']);
      await svc.ok(['sharing:remove', 'bob'], { cwd: checkout });
      expect(await svc.json(['sharing'], { cwd: checkout })).toEqual([]);
      await svc.ok(['perms:create', 'bob', '--admin', '--profile', 'admin']);
      expect(await svc.json<Array<{ username: string }>>(['perms', '--admin', '--profile', 'admin'])).toEqual(
        expect.arrayContaining([expect.objectContaining({ username: 'bob' })]),
      );
      await svc.ok(['perms:delete', 'bob', '--admin', '--profile', 'admin']);
    });

    it('apps:transfer gives the app to another user', async () => {
      const transferred = await svc.json<{ owner: string }>(['apps:transfer', 'root', '-a', 'imaged']);
      expect(transferred.owner).toBe('root');
      expect((await svc.run(['apps:info', '-a', 'imaged'])).code).toBe(1);
    });

    it('apps:destroy needs confirmation when not on a terminal, then destroys the app and its remote', async () => {
      const unconfirmed = await svc.run(['apps:destroy'], { cwd: checkout });
      expect(unconfirmed.code).toBe(2);
      expect(unconfirmed.stderr).toContain('--confirm hello');
      expect((await svc.run(['apps:destroy', '--confirm', 'other'], { cwd: checkout })).code).toBe(2);
      expect(await svc.ok(['apps:destroy', '--confirm', 'hello'], { cwd: checkout })).toContain('Destroyed hello');
      expect(await svc.json(['apps'])).toEqual([]);
      expect(() => git(['remote', 'get-url', 'svc'])).toThrow();
      expect((await svc.run(['apps:info', '-a', 'hello'])).code).toBe(1);
    });

    it('keys:remove removes the key', async () => {
      await svc.ok(['keys:remove', 'alice@laptop']);
      expect(await svc.json(['keys'])).toEqual([]);
    });
  });
});
