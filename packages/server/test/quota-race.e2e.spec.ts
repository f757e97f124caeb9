import { describeEachBackend, signUp, startTestServer, type TestServer } from './support';
import { RACE_QUOTAS, raceAppCreations, raceDomains, raceFirstDeploys, raceScales, type RaceTarget } from './support/quota-race';

/*
 * Quotas exact under concurrency in one controller process, on SQLite and on PostgreSQL:
 * 50 requests at once, the count equals the quota. (Two processes on one PostgreSQL
 * database: quota-race-multiprocess.int.spec.ts.)
 */
describeEachBackend('quotas raced by 50 requests at once', (backend) => {
  let server: TestServer;
  let target: RaceTarget;

  beforeAll(async () => {
    server = await startTestServer(await backend.newStore(), { ...RACE_QUOTAS });
    target = { urls: [server.url] };
    await signUp(server.api, 'root');
  });

  afterAll(async () => {
    await server?.close();
  });

  it('apps per user: 50 creations at once create exactly 10 apps', async () => {
    const alice = await signUp(server.api, 'alice');
    await raceAppCreations(target, alice.token);
  });

  it('domains per app: 50 domains at once add exactly 10', async () => {
    const dora = await signUp(server.api, 'dora');
    expect((await dora.api.post('/v1/apps/', { id: 'domains' })).status).toBe(201);
    await raceDomains(target, dora.token, 'domains');
  });

  it("processes per user: 50 scales of the user's apps at once end at exactly 16 processes", async () => {
    const bob = await signUp(server.api, 'bob');
    await raceScales(target, bob.token, 'bob');
  });

  it('processes per user: 50 first deploys at once, each starting web=1, end at exactly 16; the refused record nothing', async () => {
    const carol = await signUp(server.api, 'carol');
    await raceFirstDeploys(target, carol.token, 'carol');
  });
});
