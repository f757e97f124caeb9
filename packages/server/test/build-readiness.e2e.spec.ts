import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { WorkingCopy, keyPair } from '../../builder-git/test/support/git-client';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, signUp, testUidRange, type Session } from './support';

jest.setTimeout(120_000);

/*
 * A controller whose builds cannot run (the process scheduler with a sandbox that cannot be set
 * up: bubblewrap is not where SANDBOX_BWRAP says, and on a machine without root or Linux it
 * could not be either): /readyz says `degraded` with the reason and its fix, the start-up log
 * says it once, and a git push is refused at once with the same sentence, before anything is
 * checked out. Real git and ssh against the real server; no sandbox tool is needed.
 */
describe('a controller whose builds cannot run', () => {
  let root: string;
  let server: RunningServer;
  let alice: Session;
  let copy: WorkingCopy;
  const log: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-builds-blocked-'));
    const config = loadConfig({
      SCHEDULER: 'process',
      SANDBOX_BWRAP: '/nonexistent/bwrap',
      SANDBOX_UID_RANGE: testUidRange(),
      PROCESS_PORT_RANGE: '41050-41099',
      DATA_DIR: join(root, 'data'),
      GIT_SSH_PORT: '0',
      ROUTER_PORT: '0',
      ROUTER_WORKERS: '0',
      HOST: '127.0.0.1',
      PORT: '0',
    });
    server = await startServer(config, pino({ level: 'info' }, { write: (line: string) => log.push(line) }));
    alice = await signUp(new ApiClient(server.url), 'alice');
    const key = await keyPair(root, 'alice');
    expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: key.publicKey })).status).toBe(201);
    expect((await alice.api.post('/v1/apps/', { id: 'blocked' })).status).toBe(201);
    copy = await WorkingCopy.init(join(root, 'app'), join(root, 'home'), key);
    await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${server.gitPort as number}/blocked.git`]);
  });

  afterAll(async () => {
    await server?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('answers /readyz degraded with the reason and its fix, and says it once in the start-up log', async () => {
    const ready = await alice.api.get<{ status: string; reasons: string[] }>('/readyz');

    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('degraded');
    expect(ready.body.reasons).toEqual([expect.stringMatching(/^apps cannot run: the sandbox is unavailable: .+ Run the controller as root on Linux with bubblewrap/)]);
    const reason = ready.body.reasons[0] as string;
    expect(log.filter((line) => line.includes(JSON.stringify(reason).slice(1, -1)))).toHaveLength(1);
  });

  it('refuses a git push at once with the same sentence, before any checkout, and git exits non-zero', async () => {
    const reason = (await alice.api.get<{ reasons: string[] }>('/readyz')).body.reasons[0] as string;
    await copy.commit({ 'package.json': '{"scripts":{"start":"node server.js"}}\n', 'server.js': 'require("http").createServer().listen(process.env.PORT)\n' });

    const began = Date.now();
    const outcome = await copy.git(['push', 'svc', 'main']);
    const tookMs = Date.now() - began;

    expect(outcome.code).not.toBe(0);
    expect(outcome.stderr).toContain(`remote: !      ${reason}`);
    expect(outcome.stderr).toContain('[remote rejected] main -> main (pre-receive hook declined)');
    expect(outcome.stderr).not.toContain('Checked out');
    expect(tookMs).toBeLessThan(20_000);
    const builds = join(root, 'data', 'builds', 'blocked');
    expect(existsSync(builds) ? readdirSync(builds) : []).toEqual([]);
    expect((await alice.api.get<{ count: number }>('/v1/apps/blocked/builds/')).body.count).toBe(0);
  });
});
