import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TlsName } from '@svc/core';
import { createDatabase, type Database } from '../src';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from './support/postgres';

const T0 = new Date(Date.UTC(2026, 10, 26, 12, 0, 0, 250));
const later = (ms: number): Date => new Date(T0.getTime() + ms);

function aName(name: string, fields: Partial<TlsName> = {}): TlsName {
  return { name, app: 'shop', state: 'pending', certificate: null, sealedKey: null, expires: null, reason: null, failures: 0, nextAttempt: T0, updated: T0, ...fields };
}

/** Two handles on one database, as two controller processes would open it. */
interface Pair {
  first: Database;
  second: Database;
  close(): Promise<void>;
}

function describeTlsStore(dialect: string, open: () => Promise<Pair>): void {
  describe(`TypeOrmTlsStore [${dialect}]`, () => {
    let pair: Pair;
    beforeEach(async () => {
      pair = await open();
    });
    afterEach(async () => {
      await pair.close();
    });

    it('records a name once, reads it back to the millisecond, and lists by app', async () => {
      const tls = pair.first.createTlsStore();
      await tls.insert(aName('www.shop.example'));
      await tls.insert(aName('www.shop.example', { app: 'other' }));
      await tls.insert(aName('a.other.example', { app: 'other' }));

      expect(await tls.find('www.shop.example')).toEqual(aName('www.shop.example'));
      expect((await tls.list()).map((row) => row.name)).toEqual(['a.other.example', 'www.shop.example']);
      expect((await tls.listForApp('shop')).map((row) => row.name)).toEqual(['www.shop.example']);
    });

    it('gives a name\'s lease to one of two processes asking at once, and to another only once it expired', async () => {
      const one = pair.first.createTlsStore();
      const two = pair.second.createTlsStore();
      await one.insert(aName('www.shop.example'));

      const results = await Promise.all([one.acquire('www.shop.example', 'p1', later(60_000), T0), two.acquire('www.shop.example', 'p2', later(60_000), T0)]);

      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results[0] ? 'p1' : 'p2';
      const loser = winner === 'p1' ? 'p2' : 'p1';
      expect(await two.acquire('www.shop.example', loser, later(120_000), later(59_000))).toBe(false);
      expect(await two.save(aName('www.shop.example', { state: 'failed', reason: 'nope' }), loser)).toBe(false);
      expect(await two.acquire('www.shop.example', loser, later(120_000), later(60_000))).toBe(true);
      expect(await one.save(aName('www.shop.example', { state: 'failed', reason: 'stale' }), winner)).toBe(false);
      const issued = aName('www.shop.example', { state: 'issued', certificate: 'PEM', sealedKey: 'sealed', expires: later(90 * 86_400_000), failures: 0, nextAttempt: later(1) });
      expect(await one.save(issued, loser)).toBe(true);
      await one.release('www.shop.example', loser);
      expect(await two.acquire('www.shop.example', winner, later(200_000), later(61_000))).toBe(true);
      expect(await two.find('www.shop.example')).toEqual(issued);
    });

    it('answers a challenge only for its host and until it expires', async () => {
      const tls = pair.first.createTlsStore();
      await tls.putChallenge('tok', 'tok.thumb', 'WWW.shop.example', new Date(Date.now() + 60_000));
      await tls.putChallenge('old', 'old.thumb', 'www.shop.example', new Date(Date.now() - 1000));

      expect(await pair.second.createTlsStore().challenge('tok', 'www.shop.example')).toBe('tok.thumb');
      expect(await tls.challenge('tok', 'evil.example')).toBeNull();
      expect(await tls.challenge('old', 'www.shop.example')).toBeNull();
      await tls.removeChallenge('tok');
      expect(await tls.challenge('tok', 'www.shop.example')).toBeNull();
    });

    it('keeps the first account key stored for a directory, and each app\'s redirect setting', async () => {
      const tls = pair.first.createTlsStore();
      expect(await tls.account('https://acme.test/dir')).toBeNull();
      expect(await tls.saveAccount('https://acme.test/dir', 'first', T0)).toBe('first');
      expect(await pair.second.createTlsStore().saveAccount('https://acme.test/dir', 'second', T0)).toBe('first');

      expect(await tls.httpsRedirect('shop')).toBe(false);
      await tls.setHttpsRedirect('shop', true);
      expect(await pair.second.createTlsStore().httpsRedirect('shop')).toBe(true);
      await tls.setHttpsRedirect('blog', true);
      await tls.setHttpsRedirect('cafe', false);
      expect(await pair.second.createTlsStore().httpsRedirectApps()).toEqual(['blog', 'shop']);
      await tls.setHttpsRedirect('shop', false);
      expect(await tls.httpsRedirect('shop')).toBe(false);
      expect(await tls.httpsRedirectApps()).toEqual(['blog']);
    });

    it('keeps a name\'s back-off per owner after its row is removed, for every process, until it is forgotten', async () => {
      const tls = pair.first.createTlsStore();
      await tls.insert(aName('gone.example'));
      await tls.keepBackoff({ name: 'gone.example', owner: 'mallory', failures: 1, nextAttempt: later(60_000), reason: null });
      await tls.keepBackoff({ name: 'gone.example', owner: 'mallory', failures: 2, nextAttempt: later(120_000), reason: 'NXDOMAIN' });
      await tls.remove('gone.example');
      const other = pair.second.createTlsStore();
      expect(await other.backoff('gone.example', 'mallory')).toEqual({ name: 'gone.example', owner: 'mallory', failures: 2, nextAttempt: later(120_000), reason: 'NXDOMAIN' });
      // Another user who adds the name later starts afresh.
      expect(await other.backoff('gone.example', 'alice')).toBeNull();
      await tls.keepBackoff({ name: 'old.example', owner: 'mallory', failures: 1, nextAttempt: later(1000), reason: null });
      await other.forgetBackoffsBefore(later(60_000));
      expect(await tls.backoff('old.example', 'mallory')).toBeNull();
      expect(await tls.backoff('gone.example', 'mallory')).not.toBeNull();
      await other.forgetBackoff('gone.example', 'mallory');
      expect(await tls.backoff('gone.example', 'mallory')).toBeNull();
    });

    it('pauses new orders for every process until the latest pause recorded', async () => {
      const tls = pair.first.createTlsStore();
      expect(await tls.ordersPausedUntil(T0)).toBeNull();
      await tls.pauseOrders(later(3_600_000));
      await pair.second.createTlsStore().pauseOrders(later(60_000));
      expect(await pair.second.createTlsStore().ordersPausedUntil(T0)).toEqual(later(3_600_000));
      expect(await tls.ordersPausedUntil(later(3_600_000))).toBeNull();
    });
  });
}

describeTlsStore('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-tls-'));
  const first = await createDatabase({ dataDir: dir });
  await first.migrate();
  // SQLite serves one controller process: its "second process" is a second store on the same handle.
  return {
    first,
    second: first,
    close: async () => {
      await first.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

if (TEST_DATABASE_URL !== null) {
  const server = TEST_DATABASE_URL;
  describeTlsStore('postgresql', async () => {
    const scratch: ScratchDatabase = await createScratchDatabase(server, 'svc_tls');
    const first = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
    await first.migrate();
    const second = await createDatabase({ url: scratch.url, dataDir: tmpdir() });
    return {
      first,
      second,
      close: async () => {
        await first.close();
        await second.close();
        await scratch.drop();
      },
    };
  });
} else if (process.env.CI === 'true') {
  it('TypeOrmTlsStore [postgresql] needs TEST_DATABASE_URL under CI=true', () => {
    throw new Error('TEST_DATABASE_URL is not set under CI=true');
  });
} else {
  process.stdout.write('TypeOrmTlsStore [postgresql] not run: TEST_DATABASE_URL is not set.\n');
}
