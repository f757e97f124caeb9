import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, startServer } from '../src';

/*
 * The start-up checks on a real start: a data directory whose apps another scheduler ran is
 * refused with the apps' names before anything is made (no engine is even asked), and a
 * taken port stops the start naming its setting.
 */

const silent = pino({ level: 'silent' });

async function call(url: string, method: string, path: string, body: unknown, token?: string): Promise<{ status: number; body: { token?: string } }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token === undefined ? {} : { Authorization: `token ${token}` }) },
    body: body === null ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as { token?: string } };
}

describe('the start-up checks of a controller', () => {
  let dataDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-preflight-e2e-'));
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string>): Record<string, string> => ({ DATA_DIR: dataDir, PORT: '0', ROUTER_PORT: '0', GIT_SSH_PORT: 'off', LOG_LEVEL: 'silent', ...extra });

  it('refuses a data directory whose apps the process scheduler ran when this start would use docker, naming them, and starts once told to adopt them', async () => {
    // Containers recorded (the memory scheduler runs nothing), then the record of a process controller.
    const first = await startServer(loadConfig(env({ SCHEDULER: 'memory' })), silent);
    try {
      await call(first.url, 'POST', '/v1/auth/register/', { username: 'alice', password: 's3cret-pass', email: 'alice@example.com' });
      const { body } = await call(first.url, 'POST', '/v1/auth/login/', { username: 'alice', password: 's3cret-pass' });
      expect((await call(first.url, 'POST', '/v1/apps/', { id: 'myapp' }, body.token)).status).toBe(201);
      expect((await call(first.url, 'POST', '/v1/apps/myapp/builds/', { image: 'example/myapp:1.0' }, body.token)).status).toBe(201);
    } finally {
      await first.close();
    }
    await writeFile(join(dataDir, 'scheduler'), 'process\n');

    // No engine answers there: the refusal comes before anything asks one.
    const docker = env({ SCHEDULER: 'docker', DOCKER_HOST: `unix://${join(dataDir, 'no-engine.sock')}` });
    await expect(startServer(loadConfig(docker), silent)).rejects.toThrow(
      'this data directory was last run with SCHEDULER=process, and this start would use docker: app myapp would not run. Set SCHEDULER=process to keep running them as before, or set SCHEDULER_ADOPT=1 (once)',
    );
    expect(await readFile(join(dataDir, 'scheduler'), 'utf8')).toBe('process\n');

    // Adopted: the check lets the start go on (which then needs the engine it names).
    await expect(startServer(loadConfig({ ...docker, SCHEDULER_ADOPT: '1' }), silent)).rejects.not.toThrow(/last run with SCHEDULER=process/);
    expect(await readFile(join(dataDir, 'scheduler'), 'utf8')).toBe('docker\n');
  }, 60_000);

  it('stops a start whose git port is taken, naming GIT_SSH_PORT, before the database is made', async () => {
    const holder = await startServer(loadConfig(env({ SCHEDULER: 'memory', GIT_SSH_PORT: '0', DATA_DIR: join(dataDir, 'holder') })), silent);
    try {
      const second = env({ SCHEDULER: 'memory', GIT_SSH_PORT: String(holder.gitPort), DATA_DIR: join(dataDir, 'second') });
      await expect(startServer(loadConfig(second), silent)).rejects.toThrow(`GIT_SSH_PORT: port ${holder.gitPort} on 127.0.0.1 is already in use`);
      await expect(readFile(join(dataDir, 'second', 'controller.sqlite'))).rejects.toThrow(/ENOENT/);
    } finally {
      await holder.close();
    }
  }, 60_000);
});
