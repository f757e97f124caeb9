import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase } from '@svc/persistence-typeorm';
import { describeEachBackend, inlineNode, signUp, useServer, type HttpResponse, type Session } from './support';

jest.setTimeout(180_000);

/*
 * QUOTA_RUNS_PER_USER as a hostile tenant meets it: a flood of one-off processes on the
 * process scheduler, sent at once by an owner and a collaborator (both charged to the
 * owner), runs at most the quota; the rest are refused 429 RUN.TOO_MANY before anything
 * starts, a release phase too, and another tenant is not held back. Slots held through a
 * second handle on the database (as another controller process) count; an expired one does
 * not.
 */

const QUOTA = 3;
const FLOOD = 8;
const WEB = inlineNode(`require('http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`);

type RunAnswer = HttpResponse<unknown>;

/** A run that marks its start in `dir`, then waits until `dir/go` exists. */
const waitingRun = (dir: string): string => `touch ${dir}/started-$$; while [ ! -e ${dir}/go ]; do sleep 0.1; done; echo done`;

async function until<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describeEachBackend('one-off processes per owner (QUOTA_RUNS_PER_USER)', (backend) => {
  const server = useServer(backend, {
    SCHEDULER: 'process',
    // The runs wait on a file of this test: unconfined, they see it (the sandbox is sandbox.e2e's subject).
    UNSAFE_SINGLE_USER_DEV: '1',
    PROCESS_PORT_RANGE: '40100-40149',
    QUOTA_RUNS_PER_USER: String(QUOTA),
    HEALTHCHECK_TIMEOUT: '60',
  });
  let alice: Session;
  let carol: Session;
  let bob: Session;
  let dir: string;

  beforeAll(async () => {
    alice = await signUp(server.api, 'alice');
    carol = await signUp(server.api, 'carol');
    bob = await signUp(server.api, 'bob');
    for (const [owner, app] of [[alice, 'flood'], [bob, 'quiet']] as const) {
      expect((await owner.api.post('/v1/apps/', { id: app })).status).toBe(201);
      expect((await owner.api.post(`/v1/apps/${app}/builds/`, { image: `example/${app}:v1`, procfile: { web: WEB } })).status).toBe(201);
    }
    expect((await alice.api.post('/v1/apps/flood/perms/', { username: 'carol' })).status).toBe(201);
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-run-quota-'));
  });

  afterEach(async () => {
    await writeFile(join(dir, 'go'), '');
    await rm(dir, { recursive: true, force: true });
  });

  const started = async (): Promise<number> => (await readdir(dir)).filter((name) => name.startsWith('started-')).length;

  it(`of ${FLOOD} runs sent at once by the owner and a collaborator, runs ${QUOTA}; the others are refused 429 before anything starts`, async () => {
    const settled: RunAnswer[] = [];
    const runs = Array.from({ length: FLOOD }, (_, i) =>
      (i % 2 === 0 ? alice : carol).api.post('/v1/apps/flood/run', { command: waitingRun(dir) }).then((answer) => {
        settled.push(answer);
        return answer;
      }),
    );

    // The refused answer at once; the admitted wait for the file, which does not exist yet.
    await until('the refusals', async () => (settled.length >= FLOOD - QUOTA ? true : null));
    await until(`${QUOTA} runs started`, async () => ((await started()) >= QUOTA ? true : null));
    expect(settled).toHaveLength(FLOOD - QUOTA);
    for (const refused of settled) {
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ detail: expect.stringContaining(`already run ${QUOTA} one-off processes`) });
    }
    expect(await started()).toBe(QUOTA);

    // Meanwhile a release phase of the owner's apps is refused like a run, and nothing is released.
    const releases = await alice.api.get<{ count: number }>('/v1/apps/flood/releases/');
    const deploy = await alice.api.post('/v1/apps/flood/builds/', { image: 'example/flood:v2', procfile: { web: WEB, release: 'echo migrated' } });
    expect(deploy.status).toBe(429);
    expect((await alice.api.get<{ count: number }>('/v1/apps/flood/releases/')).body.count).toBe(releases.body.count);
    // Another tenant runs as usual.
    expect(await bob.api.post('/v1/apps/quiet/run', { command: 'echo hi' })).toMatchObject({ status: 200, body: [0, 'hi\n'] });

    await writeFile(join(dir, 'go'), '');
    const answers = await Promise.all(runs);
    const admitted = answers.filter((answer) => answer.status !== 429);
    expect(admitted.map((answer) => answer.body)).toEqual(Array.from({ length: QUOTA }, () => [0, 'done\n']));
    expect(await started()).toBe(QUOTA);
    // Every slot was given back: the next run and the release phase go through.
    expect(await carol.api.post('/v1/apps/flood/run', { command: 'echo again' })).toMatchObject({ status: 200, body: [0, 'again\n'] });
    expect((await alice.api.post('/v1/apps/flood/builds/', { image: 'example/flood:v2', procfile: { web: WEB, release: 'echo migrated' } })).status).toBe(201);
  });

  it('counts the slots another controller process holds in the database, and not those that expired', async () => {
    const store = server.current.store;
    const other = await createDatabase(store.databaseUrl === undefined ? { dataDir: store.dataDir } : { url: store.databaseUrl, dataDir: dir });
    try {
      const slots = other.createRunSlotStore();
      const now = new Date();
      const live = new Date(now.getTime() + 120_000);
      for (let i = 0; i < QUOTA - 1; i += 1) {
        expect((await slots.acquire({ build: `elsewhere-${i}`, username: 'alice', started: now, expires: live }, QUOTA, now)).taken).toBe(true);
      }
      // A slot whose controller died: it expired a second ago.
      expect((await slots.acquire({ build: 'dead', username: 'alice', started: now, expires: new Date(now.getTime() - 1000) }, QUOTA, now)).taken).toBe(true);

      const first = alice.api.post('/v1/apps/flood/run', { command: waitingRun(dir) });
      await until('the admitted run', async () => ((await started()) === 1 ? true : null));
      const second = await carol.api.post('/v1/apps/flood/run', { command: 'echo no' });
      expect(second.status).toBe(429);
      expect(second.body).toEqual({ detail: expect.stringContaining(`already run ${QUOTA} one-off processes`) });

      await writeFile(join(dir, 'go'), '');
      expect(await first).toMatchObject({ status: 200, body: [0, 'done\n'] });
      for (let i = 0; i < QUOTA - 1; i += 1) await slots.release(`elsewhere-${i}`);
      expect(await carol.api.post('/v1/apps/flood/run', { command: 'echo yes' })).toMatchObject({ status: 200, body: [0, 'yes\n'] });
    } finally {
      await other.close();
    }
  });
});
