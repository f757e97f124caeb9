import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from '../../persistence-typeorm/test/support/postgres';
import { ownIdentity, type HolderRecord } from '../src/data-dir-holder';
import { DATA_DIR_LOCK_FILE } from '../src/data-dir-lock';
import { startController, type ControllerProcess } from './processes/controller-process';
import { call, callUntil, registerAndLogin } from './processes/http';
import { buildWorkspace, type WorkspaceBuild } from './processes/workspace-build';
import { inlineNode, viaRouter } from './support';

jest.setTimeout(180_000);

/** A web process that answers its pid. */
const APP_JS = `
require('http').createServer((req, res) => res.end(String(process.pid))).listen(Number(process.env.PORT));
process.on('SIGTERM', () => process.exit(0));
`;

let build: WorkspaceBuild;
let dataDir: string;

beforeAll(async () => {
  build = await buildWorkspace();
});

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-lock-int-'));
});

afterEach(async () => {
  await killRecordedGroups(dataDir);
  await rm(dataDir, { recursive: true, force: true });
});

async function lockRecord(): Promise<HolderRecord> {
  return JSON.parse(await readFile(join(dataDir, DATA_DIR_LOCK_FILE), 'utf8')) as HolderRecord;
}

/** Every path under the data directory, with the content of the process records. */
async function tree(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    found.push(relative(dataDir, path));
    if (entry.isDirectory()) found.push(...(await tree(path)));
  }
  return found.sort();
}

/** The process groups the process scheduler recorded under the data directory. */
async function recordedGroups(): Promise<Array<{ pid: number; app: string }>> {
  const directory = join(dataDir, 'processes');
  const names = await readdir(directory).catch(() => [] as string[]);
  return Promise.all(names.map(async (name) => JSON.parse(await readFile(join(directory, name), 'utf8')) as { pid: number; app: string }));
}

async function killRecordedGroups(dir: string): Promise<void> {
  const directory = join(dir, 'processes');
  for (const name of await readdir(directory).catch(() => [] as string[])) {
    try {
      const { pid } = JSON.parse(await readFile(join(directory, name), 'utf8')) as { pid: number };
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts a controller that must be refused: resolves with what it printed and how it exited. */
async function refusedStart(env: Record<string, string>): Promise<string> {
  const error = await startController(build, { env }).then(
    async (controller) => {
      await controller.kill();
      return new Error(`the second controller started (${controller.url})`);
    },
    (reason: unknown) => reason as Error,
  );
  return error.message;
}

describe('one controller per data directory, with real controller processes', () => {
  it('refuses a second controller on the data directory with other ports, touching nothing of the first; after a kill -9 of the first, the next one starts', async () => {
    const env = {
      SCHEDULER: 'process',
      // Confinement is the sandbox tests' subject: here the apps run unconfined.
      UNSAFE_SINGLE_USER_DEV: '1',
      PROCESS_PORT_RANGE: '54000-54999',
      HEALTHCHECK_TIMEOUT: '30',
      PROCESS_STOP_TIMEOUT_SECONDS: '2',
      DATA_DIR: dataDir,
    };
    let first: ControllerProcess | null = await startController(build, { env });
    let next: ControllerProcess | null = null;
    try {
      const token = await registerAndLogin(first.url, 'alice');
      expect((await call(first.url, 'POST', '/v1/apps/', token, { id: 'held' })).status).toBe(201);
      expect((await call(first.url, 'POST', '/v1/apps/held/builds/', token, { image: 'example/held:v1', procfile: { web: inlineNode(APP_JS) } })).status).toBe(201);
      const holder = await lockRecord();
      expect(holder).toMatchObject({ pid: first.pid, host: '127.0.0.1', ports: { api: Number(new URL(first.url).port), git: null } });
      const routerPort = holder.ports.router as number;
      const up = await callUntil(() => viaRouter(routerPort, 'held'), (reply) => reply.status === 200, 60_000);
      expect(up).toMatchObject({ status: 200 });
      const appPid = Number((up as { text: string }).text);
      const groups = await recordedGroups();
      expect(groups.map((group) => group.app)).toEqual(['held']);
      const files = await tree(dataDir);
      expect(files).toEqual(expect.arrayContaining([DATA_DIR_LOCK_FILE, 'apps', 'processes', 'controller.sqlite']));
      const records = await readdir(join(dataDir, 'processes'));

      // The second one: the same data directory, ports of its own (PORT and ROUTER_PORT are 0).
      const output = await refusedStart(env);

      expect(output).toContain('The controller exited before listening (code 1, signal null)');
      expect(output).toContain(
        `Failed to start: DATA_DIR: ${dataDir} is in use by another controller (pid ${first.pid} on host ${holder.hostname}, API 127.0.0.1:${holder.ports.api}, router port ${routerPort}, since ${holder.since}; process ${first.pid} is running): ` +
          "stop that controller first, or set DATA_DIR to a directory of this controller's own (each controller process needs its own, also when several share a PostgreSQL database)\n",
      );
      // It made nothing before it stopped: no database, no log line, no process started or stopped.
      expect(output).not.toContain('"level"');
      expect(await tree(dataDir)).toEqual(files);
      expect(await readdir(join(dataDir, 'processes'))).toEqual(records);
      expect(await lockRecord()).toEqual(holder);
      for (const group of groups) expect(running(group.pid)).toBe(true);
      expect(await viaRouter(routerPort, 'held')).toMatchObject({ status: 200, text: String(appPid) });
      const containers = await call(first.url, 'GET', '/v1/apps/held/containers/', token);
      expect((containers.body as { results: Array<{ state: string }> }).results.map((c) => c.state)).toEqual(['up']);

      // The first dies without a word: its lock stays, and does not keep the next one out.
      await first.kill('SIGKILL');
      first = null;
      expect((await lockRecord()).pid).not.toBe(process.pid);
      next = await startController(build, { env });
      const taken = await lockRecord();
      expect(taken.pid).toBe(next.pid);
      expect(taken.token).not.toBe(holder.token);
      expect(next.output()).toContain(`took over the lock of ${dataDir}: the controller that held it is gone (process ${holder.pid} is no longer running)`);
      const again = (await call(next.url, 'POST', '/v1/auth/login', null, { username: 'alice', password: 'correct horse battery staple' })).body as { token: string };
      expect((await call(next.url, 'GET', '/v1/apps/held/', again.token)).status).toBe(200);

      // Stopped cleanly, it leaves no lock behind.
      await next.stop();
      next = null;
      await expect(stat(join(dataDir, DATA_DIR_LOCK_FILE))).rejects.toThrow(/ENOENT/);
    } finally {
      await first?.kill('SIGKILL');
      await next?.kill('SIGKILL');
    }
  });

  it('of processes started at the same moment, exactly one takes the lock; on a stale lock too', async () => {
    const script = `
      const { acquireDataDirLock } = require(${JSON.stringify(join(build.root, 'packages', 'server', 'src', 'data-dir-lock.js'))});
      const quiet = { warn: () => undefined, error: () => undefined };
      setTimeout(() => {
        acquireDataDirLock(process.env.LOCK_DIR, { host: '127.0.0.1', ports: { api: 1, router: null, routerTls: null, git: null }, logger: quiet }).then(
          (lock) => { process.stdout.write('WON\\n'); process.stdin.resume(); process.stdin.on('end', () => lock.release().then(() => process.exit(0))); },
          (error) => { process.stdout.write('REFUSED ' + error.message + '\\n'); process.exit(3); },
        );
      }, Number(process.env.START_AT) - Date.now());
    `;
    const race = async (): Promise<string[]> => {
      const startAt = String(Date.now() + 1500);
      const children = Array.from({ length: 6 }, () => {
        const child = spawn(process.execPath, ['-r', build.resolver, '-e', script], {
          env: { PATH: process.env.PATH ?? '', NODE_PATH: build.nodePath, LOCK_DIR: dataDir, START_AT: startAt },
          stdio: ['pipe', 'pipe', 'inherit'],
        });
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        // Its one line: WON (it then holds the lock until its standard input ends) or REFUSED.
        const said = new Promise<string>((resolve) => {
          let text = '';
          child.stdout.on('data', (chunk: Buffer) => {
            text += chunk.toString('utf8');
            if (text.includes('\n')) resolve(text.trim());
          });
          void exited.then(() => resolve(text.trim()));
        });
        return { child, exited, said };
      });
      const outcomes = await Promise.all(children.map((c) => c.said));
      for (const { child } of children) child.stdin.end();
      await Promise.all(children.map((c) => c.exited));
      return outcomes;
    };

    const free = await race();
    expect(free.filter((line) => line === 'WON')).toHaveLength(1);
    expect(free.filter((line) => line.startsWith('REFUSED DATA_DIR: ') && line.includes('is in use by another controller'))).toHaveLength(5);
    await expect(stat(join(dataDir, DATA_DIR_LOCK_FILE))).rejects.toThrow(/ENOENT/);

    // A lock left by a process that is gone (a pid nothing runs as, on this machine).
    const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((resolve) => dead.once('exit', resolve));
    const template = await lockOfThisMachine(dead.pid as number);
    await writeFile(join(dataDir, DATA_DIR_LOCK_FILE), JSON.stringify(template));
    const stale = await race();
    expect(stale.filter((line) => line === 'WON')).toHaveLength(1);
    expect(stale.filter((line) => line.startsWith('REFUSED DATA_DIR: '))).toHaveLength(5);
    expect(await readdir(dataDir)).toEqual([]);
  });
});

/** A lock record as a controller of this machine and namespace, with `pid`, would have written it. */
async function lockOfThisMachine(pid: number): Promise<HolderRecord> {
  return { ...(await ownIdentity()), pid, token: 'a'.repeat(32), host: '127.0.0.1', ports: { api: 8000, router: null, routerTls: null, git: null }, since: new Date().toISOString() };
}

describe('with PostgreSQL', () => {
  if (TEST_DATABASE_URL === null) {
    if (process.env.CI === 'true') throw new Error('CI=true: the PostgreSQL case of the data directory lock needs TEST_DATABASE_URL');
    process.stdout.write('data-dir-lock.int: the PostgreSQL case was not run, TEST_DATABASE_URL is not set.\n');
    it.skip('refuses a second controller on the same DATA_DIR, while one with its own starts', () => undefined);
    return;
  }
  let scratch: ScratchDatabase;

  beforeAll(async () => {
    scratch = await createScratchDatabase(TEST_DATABASE_URL as string, 'svc_lock');
  });

  afterAll(async () => {
    await scratch?.drop();
  });

  it('refuses a second controller on the same DATA_DIR, while one with its own starts', async () => {
    const first = await startController(build, { env: { DATABASE_URL: scratch.url, DATA_DIR: dataDir } });
    const ownDir = await mkdtemp(join(tmpdir(), 'svc-lock-int-own-'));
    try {
      const output = await refusedStart({ DATABASE_URL: scratch.url, DATA_DIR: dataDir });
      expect(output).toContain(`Failed to start: DATA_DIR: ${dataDir} is in use by another controller (pid ${first.pid} on host `);

      const second = await startController(build, { env: { DATABASE_URL: scratch.url, DATA_DIR: ownDir } });
      try {
        const token = await registerAndLogin(first.url, 'alice');
        expect((await call(second.url, 'GET', '/v1/apps/', token)).status).toBe(200);
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
      await rm(ownDir, { recursive: true, force: true });
    }
  });
});
