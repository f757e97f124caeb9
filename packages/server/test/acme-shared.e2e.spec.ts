import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsResponder, type DnsResponder } from '../../certs-acme/test/support/dns';
import { describeWithPebble, freePort, startPebble, type Pebble } from '../../certs-acme/test/support/pebble';
import { TEST_DATABASE_URL, createScratchDatabase, type ScratchDatabase } from '../../persistence-typeorm/test/support/postgres';
import { signUp, startTestServer, type Session, type TestServer } from './support';

jest.setTimeout(180_000);

/*
 * Two controller processes on one PostgreSQL database, both issuing: pebble validates through
 * the first one's router only, whichever process issues (the challenge is in the database),
 * each name is issued once (the lease), and both routers serve the result.
 */

/** The status of an HTTPS GET through a router, verified against `ca` only (503: no process runs with the memory scheduler). */
function httpsStatus(port: number, name: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, servername: name, headers: { Host: name }, ca, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function describeWithPostgres(title: string, body: () => void): void {
  if (TEST_DATABASE_URL !== null) describe(title, body);
  else if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs TEST_DATABASE_URL (a PostgreSQL server)', () => {
        throw new Error('TEST_DATABASE_URL is not set under CI=true');
      });
    });
  } else {
    process.stdout.write(`${title}: not run, TEST_DATABASE_URL is not set.\n`);
    describe.skip(title, body);
  }
}

describeWithPebble('automatic HTTPS with two controller processes', () => {
  describeWithPostgres('two controllers on one PostgreSQL database issuing against pebble', () => {
    let dns: DnsResponder;
    let pebble: Pebble;
    let root: string;
    let scratch: ScratchDatabase;
    let dir: string;
    const servers: TestServer[] = [];
    let alice: Session;
    const tlsPorts: number[] = [];

    beforeAll(async () => {
      dns = await startDnsResponder({ 'www.pair.test': '127.0.0.1', 'api.pair.test': '127.0.0.1', 'pair.apps.test': '127.0.0.1' });
      const routerPorts = [await freePort(), await freePort()];
      tlsPorts.push(await freePort(), await freePort());
      pebble = await startPebble({ httpPort: routerPorts[0] as number, dnsServer: dns.address });
      root = await pebble.issuingRoot();
      scratch = await createScratchDatabase(TEST_DATABASE_URL as string, 'svc_acme_pair');
      dir = await mkdtemp(join(tmpdir(), 'svc-acme-pair-'));
      await writeFile(join(dir, 'ca.pem'), pebble.apiCa);
      for (const i of [0, 1]) {
        servers.push(
          await startTestServer(
            { dataDir: await mkdtemp(join(dir, `data-${i}-`)), databaseUrl: scratch.url },
            {
              PLATFORM_DOMAIN: 'apps.test',
              ROUTER_PORT: String(routerPorts[i]),
              ROUTER_TLS_PORT: String(tlsPorts[i]),
              ACME_DIRECTORY_URL: pebble.directory,
              ACME_CA_FILE: join(dir, 'ca.pem'),
              ACME_INTERVAL_SECONDS: '1',
            },
          ),
        );
      }
      alice = await signUp((servers[1] as TestServer).api, 'alice');
    });

    afterAll(async () => {
      for (const server of servers) await server.close();
      await pebble?.close();
      await dns?.close();
      await scratch?.drop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('issues each name once, validated through either router, and every router serves it', async () => {
      expect((await alice.api.post('/v1/apps/', { id: 'pair' })).status).toBe(201);
      for (const domain of ['www.pair.test', 'api.pair.test']) expect((await alice.api.post('/v1/apps/pair/domains/', { domain })).status).toBe(201);

      const deadline = Date.now() + 60_000;
      let names: Array<{ name: string; state: string }> = [];
      while (Date.now() < deadline) {
        names = (await alice.api.get('/v1/apps/pair/tls/')).body.names as typeof names;
        if (names.length === 3 && names.every((n) => n.state === 'issued')) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(names.map((n) => [n.name, n.state])).toEqual([
        ['api.pair.test', 'issued'],
        ['pair.apps.test', 'issued'],
        ['www.pair.test', 'issued'],
      ]);
      // Both processes ran rounds every second the whole time: each name was issued once.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const log = (await alice.api.get('/v1/apps/pair/logs')).text;
      for (const name of ['api.pair.test', 'pair.apps.test', 'www.pair.test']) {
        expect(log.split('\n').filter((line) => line.includes(`certificate for ${name} issued`))).toHaveLength(1);
      }
      for (const port of tlsPorts) {
        for (const name of ['www.pair.test', 'pair.apps.test']) expect(await httpsStatus(port, name, root)).toBe(503);
      }
    });
  });
});
