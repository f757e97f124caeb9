import { writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { startDnsResponder, type DnsResponder } from '../../certs-acme/test/support/dns';
import { describeWithPebble, freePort, startPebble, type Pebble } from '../../certs-acme/test/support/pebble';
import { describeOnSqlite, signUp, startTestServer, type Session, type TestServer } from './support';

/*
 * Automatic HTTPS between tenants, against Debian's pebble, as a hostile tenant would try
 * it: six names whose HTTP-01 challenge never answers (their DNS points at 127.0.0.2, where
 * a listener of the test accepts connections and never replies, so that pebble waits for its
 * own timeout, about 16 s, on each), and add/remove cycles of a failing name, while another
 * tenant adds a domain. Orders are counted at pebble (its `POST /order-plz` requests).
 */

interface NameState {
  name: string;
  state: string;
  reason: string | null;
}

const STALLED = ['s1.mallory.test', 's2.mallory.test', 's3.mallory.test', 's4.mallory.test', 's5.mallory.test', 's6.mallory.test'];
const CYCLED = 'cycle.mallory.test';
const ALICE = 'www.alice.test';

async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}; last seen: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    last = await read();
  }
  return last;
}

/** A TCP listener that accepts connections and never answers: a challenge that never answers. */
async function silentListener(port: number): Promise<{ server: Server; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.2', () => resolve()));
  return {
    server,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describeWithPebble('fair automatic HTTPS against pebble', () => {
  describeOnSqlite('certificates fair by tenant', 'the TLS state store of every process, leases, back-off and pauses in tls-store.int; two processes on one database in acme-shared.e2e', (backend) => {
    jest.setTimeout(240_000);
    let dns: DnsResponder;
    let pebble: Pebble;
    let silent: { close: () => Promise<void> };
    let server: TestServer;
    let alice: Session;
    let mallory: Session;

    const names = async (session: Session, app: string): Promise<NameState[]> => ((await session.api.get(`/v1/apps/${app}/tls/`)).body as unknown as { names: NameState[] }).names;
    const stateOf = async (session: Session, app: string, name: string): Promise<NameState | undefined> => (await names(session, app)).find((n) => n.name === name);
    const orders = (): number => pebble.output().split('\n').filter((line) => line.includes('POST /order-plz')).length;

    beforeAll(async () => {
      const routerPort = await freePort();
      silent = await silentListener(routerPort);
      dns = await startDnsResponder({ [ALICE]: '127.0.0.1', ...Object.fromEntries(STALLED.map((name) => [name, '127.0.0.2'])) });
      pebble = await startPebble({ httpPort: routerPort, dnsServer: dns.address });
      const store = await backend.newStore();
      await writeFile(join(store.dataDir, 'pebble-api-ca.pem'), pebble.apiCa);
      server = await startTestServer(store, {
        PLATFORM_DOMAIN: 'localhost',
        ROUTER_PORT: String(routerPort),
        ACME_DIRECTORY_URL: pebble.directory,
        ACME_CA_FILE: join(store.dataDir, 'pebble-api-ca.pem'),
        ACME_INTERVAL_SECONDS: '1',
        // A failed name is not tried again within the test.
        ACME_RETRY_BASE_SECONDS: '3600',
        ACME_CONCURRENCY: '2',
        ACME_PENDING_PER_USER: '5',
      });
      alice = await signUp(server.api, 'alice');
      mallory = await signUp(server.api, 'mallory');
      expect((await alice.api.post('/v1/apps/', { id: 'shop' })).status).toBe(201);
      expect((await mallory.api.post('/v1/apps/', { id: 'stalls' })).status).toBe(201);
      expect((await mallory.api.post('/v1/apps/', { id: 'cycles' })).status).toBe(201);
    });

    afterAll(async () => {
      // Stopping the server waits for the orders still running (pebble gives each up after its timeout).
      await server?.close();
      await pebble?.close();
      await silent?.close();
      await dns?.close();
    });

    it('keeps a failed name\'s back-off through five add/remove cycles: they make no new order', async () => {
      expect((await mallory.api.post('/v1/apps/cycles/domains/', { domain: CYCLED })).status).toBe(201);
      const failed = await eventually('the name failed', () => stateOf(mallory, 'cycles', CYCLED), (n) => n?.state === 'failed');
      expect(failed?.reason).toMatch(/cycle\.mallory\.test/);
      const before = orders();
      expect(before).toBe(1);

      for (let cycle = 0; cycle < 5; cycle += 1) {
        expect((await mallory.api.delete(`/v1/apps/cycles/domains/${CYCLED}`)).status).toBe(204);
        // A round runs right after each change; a second one follows within the interval.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        expect((await mallory.api.post('/v1/apps/cycles/domains/', { domain: CYCLED })).status).toBe(201);
        const again = await eventually('the name is recorded again', () => stateOf(mallory, 'cycles', CYCLED), (n) => n !== undefined && n.state !== 'none');
        expect(again).toMatchObject({ state: 'failed', reason: failed?.reason });
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(orders()).toBe(before);
    });

    it('issues another tenant\'s certificate within about one order\'s time while six stalled names of one tenant wait their turn and its cap', async () => {
      const ordersBefore = orders();
      for (const name of STALLED) expect((await mallory.api.post('/v1/apps/stalls/domains/', { domain: name })).status).toBe(201);
      // Two slots: two of mallory's names are being ordered (and stall).
      await eventually('two stalled orders run', async () => orders(), (count) => count === ordersBefore + 2, 30_000);
      const stalledSince = Date.now();

      const added = Date.now();
      expect((await alice.api.post('/v1/apps/shop/domains/', { domain: ALICE })).status).toBe(201);
      let firstStallEnded: number | null = null;
      const seen = await eventually(
        'alice\'s certificate is issued',
        async () => {
          const seen = { alice: await stateOf(alice, 'shop', ALICE), mallory: await names(mallory, 'stalls') };
          if (firstStallEnded === null && seen.mallory.some((n) => n.state === 'failed')) firstStallEnded = Date.now();
          return seen;
        },
        (r) => r.alice?.state === 'issued' || r.alice?.state === 'failed',
        180_000,
      );
      const took = Date.now() - added;
      expect(seen.alice).toMatchObject({ state: 'issued', reason: null });
      // She took the first slot that freed, ahead of mallory's two other orderable names (s3, s4):
      // at most the two orders running when she came had ended. In name order, one queue for all,
      // she would have waited for s3 and s4 as well.
      const malloryFailed = seen.mallory.filter((n) => n.state === 'failed').map((n) => n.name);
      expect(malloryFailed.length).toBeLessThanOrEqual(2);
      expect(seen.mallory.filter((n) => ['s3.mallory.test', 's4.mallory.test'].includes(n.name)).map((n) => n.state)).toEqual(['pending', 'pending']);
      // A generous bound: one stalled order's time (until the first of them ended: pebble's timeout), and 30 s more.
      const oneOrder = (firstStallEnded ?? Date.now()) - stalledSince;
      expect(took).toBeLessThan(oneOrder + 30_000);

      // Mallory has seven names without a certificate; five may be ordered, the last two wait, saying why.
      const waiting = seen.mallory.filter((n) => n.reason?.includes('ACME_PENDING_PER_USER'));
      expect(waiting.map((n) => n.name)).toEqual(['s5.mallory.test', 's6.mallory.test']);
      expect(waiting.every((n) => n.state === 'pending')).toBe(true);

      // Once mallory's four orderable names are done, nothing more was ordered: the capped ones took no slot.
      await eventually('mallory\'s orderable names failed', () => names(mallory, 'stalls'), (list) => list.filter((n) => n.state === 'failed').length === 4, 120_000);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(orders()).toBe(ordersBefore + 4 + 1);
    });
  });
});
