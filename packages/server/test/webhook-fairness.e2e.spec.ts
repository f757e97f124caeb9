import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeOnSqlite, signUp, useServer, type Session } from './support';

/** How long one attempt may take here; the slow receivers answer only after it. */
const TIMEOUT_SECONDS = 6;
/** The bound on the quiet tenant's delivery: well under one timeout plus the poll (7 s), and several polls of margin above what it takes. */
const BOUND_MS = 3500;

/** What one receiver on 127.0.0.1 saw: each request's event summary and arrival, and most requests open at once. */
interface Receiver {
  server: Server;
  url: string;
  got: Array<{ summary: string; action: string; at: number }>;
  /** Requests open now, and the most open at once. */
  open: number;
  mostOpen: number;
  /** Called as each request arrives. */
  onRequest?: () => void;
}

/** A receiver that answers `status(n)` for its n-th request (from 0) after `delayMs`. */
async function receiver(delayMs: number, status: (n: number) => number = () => 204): Promise<Receiver> {
  const self: Receiver = { server: createServer(), url: '', got: [], open: 0, mostOpen: 0 };
  self.server.on('request', (req, res) => {
    self.open += 1;
    self.mostOpen = Math.max(self.mostOpen, self.open);
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const n = self.got.length;
      const event = JSON.parse(body) as { summary: string; action: string };
      self.got.push({ summary: event.summary, action: event.action, at: Date.now() });
      self.onRequest?.();
      const timer = setTimeout(() => {
        res.statusCode = status(n);
        res.end();
      }, delayMs);
      res.on('close', () => clearTimeout(timer));
    });
    // Closed by either side (answered, or the controller gave up at its timeout).
    res.on('close', () => (self.open -= 1));
  });
  await new Promise<void>((resolve) => self.server.listen(0, '127.0.0.1', resolve));
  self.url = `http://127.0.0.1:${(self.server.address() as AddressInfo).port}/hook`;
  return self;
}

const close = (r: Receiver): Promise<void> => {
  r.server.closeAllConnections();
  return new Promise((resolve) => r.server.close(() => resolve()));
};

const waitFor = async <T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** The last word of each summary: the config key a change set. */
const keys = (r: Receiver): string[] => r.got.map((g) => g.summary.split(' ').pop() as string);

describeOnSqlite(
  'webhooks: fair between tenants, slowed per receiver, in order per receiver',
  'the turns of receivers in webhook-heads.int, the event journal in events.int and events.e2e',
  (backend) => {
  const server = useServer(backend, {
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_POLL_SECONDS: '1',
    WEBHOOK_RETRY_BASE_SECONDS: '1',
    WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
    WEBHOOK_PAUSE_AFTER_FAILURES: '3',
    WEBHOOK_PAUSE_MINUTES: '10',
  });
  let mallory: Session;
  let carol: Session;
  const slow: Receiver[] = [];
  const hooks: string[] = [];

  beforeAll(async () => {
    mallory = await signUp(server.api, 'mallory');
    carol = await signUp(server.api, 'carol');
    for (let i = 0; i < 10; i++) {
      const r = await receiver((TIMEOUT_SECONDS + 4) * 1000);
      slow.push(r);
      expect((await mallory.api.post('/v1/apps/', { id: `slow-${i}` })).status).toBe(201);
      const created = await mallory.api.post<{ uuid: string }>(`/v1/apps/slow-${i}/webhooks/`, { url: r.url, events: ['config'] });
      expect(created.status).toBe(201);
      hooks.push(created.body.uuid);
    }
    expect((await carol.api.post('/v1/apps/', { id: 'quiet' })).status).toBe(201);
    expect((await carol.api.post('/v1/apps/', { id: 'flaky' })).status).toBe(201);
  });

  afterAll(async () => {
    await Promise.all(slow.map(close));
  });

  it("delivers another tenant's events within a bound while ten of one tenant's receivers time out, in order, one at a time per receiver", async () => {
    const quick = await receiver(0);
    // How many of the hostile requests were open when each of the quiet tenant's arrived.
    const hostileOpen: number[] = [];
    quick.onRequest = () => hostileOpen.push(slow.reduce((sum, r) => sum + r.open, 0));
    try {
      expect((await carol.api.post('/v1/apps/quiet/webhooks/', { url: quick.url, events: ['config'] })).status).toBe(201);
      // The hostile tenant queues three events on each of its ten slow receivers.
      for (const key of ['M1', 'M2', 'M3']) {
        for (let i = 0; i < 10; i++) expect((await mallory.api.post(`/v1/apps/slow-${i}/config/`, { values: { [key]: '1' } })).status).toBe(201);
      }
      // Its attempts are under way: the controller is waiting on its receivers.
      await waitFor('the slow receivers to be reached', () => (slow.filter((r) => r.got.length > 0).length >= 2 ? true : undefined));

      const sent = Date.now();
      for (const key of ['Q1', 'Q2', 'Q3']) expect((await carol.api.post('/v1/apps/quiet/config/', { values: { [key]: '1' } })).status).toBe(201);
      await waitFor('the quiet tenant\'s deliveries', () => (quick.got.length >= 3 ? true : undefined), 30_000);
      const took = (quick.got[0]?.at as number) - sent;
      expect(took).toBeLessThan(BOUND_MS);
      expect(keys(quick)).toEqual(['Q1', 'Q2', 'Q3']);
      // They came while the controller was still waiting on the hostile receivers.
      expect(hostileOpen[0]).toBeGreaterThanOrEqual(1);
    } finally {
      await close(quick);
    }
  });

  it('never sends a later event before an earlier one that is being retried, and never two at once to one receiver', async () => {
    // Fails the first two attempts, then answers.
    const flaky = await receiver(0, (n) => (n < 2 ? 500 : 204));
    try {
      const created = await carol.api.post<{ uuid: string }>('/v1/apps/flaky/webhooks/', { url: flaky.url, events: ['config'] });
      for (const key of ['F1', 'F2', 'F3']) expect((await carol.api.post('/v1/apps/flaky/config/', { values: { [key]: '1' } })).status).toBe(201);
      await waitFor('the flaky receiver to get every event', () => (flaky.got.length >= 5 ? true : undefined));
      expect(keys(flaky)).toEqual(['F1', 'F1', 'F1', 'F2', 'F3']);
      expect(flaky.mostOpen).toBe(1);
      const shown = await carol.api.get<{ status: string; failures: number; last_error: string; resumes_at: string | null }>(`/v1/apps/flaky/webhooks/${created.body.uuid}/`);
      expect(shown.body).toMatchObject({ status: 'active', failures: 0, last_error: '', resumes_at: null });
      // Each slow receiver saw its events in order (retries of the first before any later one), one request at a time.
      for (const r of slow) {
        const seen = keys(r);
        expect(seen).toEqual([...seen].sort());
        expect(r.mostOpen).toBeLessThanOrEqual(1);
      }
    } finally {
      await close(flaky);
    }
  });

  it('pauses a receiver that keeps timing out, shows why and until when, and sends it nothing meanwhile', async () => {
    type Shown = { status: string; failures: number; last_error: string; resumes_at: string | null };
    const paused = await waitFor(
      'a slow receiver to be paused',
      async () => {
        for (let i = 0; i < 10; i++) {
          const shown = await mallory.api.get<Shown>(`/v1/apps/slow-${i}/webhooks/${hooks[i] as string}/`);
          if (shown.body.status === 'paused') return { i, shown: shown.body };
        }
        return undefined;
      },
      150_000,
    );
    expect(paused.shown.failures).toBe(3);
    expect(paused.shown.last_error).toMatch(/time/i);
    const resumes = Date.parse(paused.shown.resumes_at as string);
    expect(resumes).toBeGreaterThan(Date.now() + 8 * 60_000);
    // Three attempts (of its first event), then nothing while it is paused.
    const r = slow[paused.i] as Receiver;
    expect(keys(r)).toEqual(['M1', 'M1', 'M1']);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(r.got).toHaveLength(3);
    // The other tenant still gets its deliveries at once.
    const quick = await receiver(0);
    try {
      expect((await carol.api.post('/v1/apps/quiet/webhooks/', { url: quick.url, events: ['config'] })).status).toBe(201);
      const sent = Date.now();
      expect((await carol.api.post('/v1/apps/quiet/config/', { values: { LATE: '1' } })).status).toBe(201);
      await waitFor('the late delivery', () => (quick.got.length >= 1 ? true : undefined), 30_000);
      expect((quick.got[0]?.at as number) - sent).toBeLessThan(BOUND_MS);
    } finally {
      await close(quick);
    }
  });
});
