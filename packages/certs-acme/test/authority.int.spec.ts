import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IssuanceFailed, type ChallengeBoard } from '@svc/core';
import { AcmeCertificateAuthority } from '../src';
import { startDnsResponder, type DnsResponder } from './support/dns';
import { describeWithPebble, startPebble, type Pebble } from './support/pebble';

jest.setTimeout(120_000);

/** Challenge answers in memory, served on a plain HTTP server as the router would. */
class ServedChallenges implements ChallengeBoard {
  readonly answers = new Map<string, { keyAuthorization: string; name: string }>();
  readonly published: string[] = [];
  readonly withdrawn: string[] = [];

  async publish(token: string, keyAuthorization: string, name: string): Promise<void> {
    this.answers.set(token, { keyAuthorization, name });
    this.published.push(name);
  }

  async withdraw(token: string): Promise<void> {
    this.answers.delete(token);
    this.withdrawn.push(token);
  }
}

describeWithPebble('AcmeCertificateAuthority against pebble', () => {
  let dns: DnsResponder;
  let pebble: Pebble;
  let http: Server;
  const challenges = new ServedChallenges();
  let authority: AcmeCertificateAuthority;

  beforeAll(async () => {
    http = createServer((req, res) => {
      const token = (req.url ?? '').replace('/.well-known/acme-challenge/', '');
      const answer = challenges.answers.get(token);
      res.writeHead(answer === undefined ? 404 : 200, { 'Content-Type': 'text/plain' }).end(answer?.keyAuthorization ?? 'no');
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    dns = await startDnsResponder({ 'ok.acme.test': '127.0.0.1' });
    pebble = await startPebble({ httpPort: (http.address() as AddressInfo).port, dnsServer: dns.address });
    authority = new AcmeCertificateAuthority({ directory: pebble.directory, ca: pebble.apiCa, pollMs: 200, email: 'ops@acme.test' });
  });

  afterAll(async () => {
    await pebble?.close();
    await dns?.close();
    await new Promise((resolve) => http?.close(resolve));
  });

  it('issues a certificate for a name that resolves here, chained to pebble\'s root, answering HTTP-01', async () => {
    const accountKey = await authority.createAccountKey();

    const issued = await authority.issue({ name: 'ok.acme.test', accountKey, challenges });

    const leaf = new X509Certificate(issued.certificate);
    expect(leaf.subjectAltName).toContain('DNS:ok.acme.test');
    expect(leaf.checkPrivateKey(createPrivateKey(issued.key))).toBe(true);
    expect(issued.expires.getTime()).toBeGreaterThan(Date.now());
    const chain = issued.certificate.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) as string[];
    const root = new X509Certificate(await pebble.issuingRoot());
    expect(new X509Certificate(chain[chain.length - 1] as string).verify(root.publicKey)).toBe(true);
    expect(challenges.published).toEqual(['ok.acme.test']);
    expect(challenges.answers.size).toBe(0);
  });

  it('fails with the server\'s reason for a name that does not resolve here', async () => {
    const accountKey = await authority.createAccountKey();

    const failure = await authority.issue({ name: 'nowhere.acme.test', accountKey, challenges }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(IssuanceFailed);
    expect((failure as IssuanceFailed).reason).toMatch(/nowhere\.acme\.test/);
    expect((failure as IssuanceFailed).reason).toMatch(/could not resolve|NXDOMAIN|DNS problem/i);
    expect(challenges.answers.size).toBe(0);
  });

  it('uses an account another process registered, also without a contact address', async () => {
    const first = new AcmeCertificateAuthority({ directory: pebble.directory, ca: pebble.apiCa, pollMs: 200 });
    const second = new AcmeCertificateAuthority({ directory: pebble.directory, ca: pebble.apiCa, pollMs: 200 });
    const accountKey = await first.createAccountKey();

    await first.issue({ name: 'ok.acme.test', accountKey, challenges });
    const again = await second.issue({ name: 'ok.acme.test', accountKey, challenges });

    expect(new X509Certificate(again.certificate).subjectAltName).toBe('DNS:ok.acme.test');
  });

  it('fails with a clear reason when the ACME server cannot be reached', async () => {
    const down = new AcmeCertificateAuthority({ directory: 'https://127.0.0.1:1/dir', pollMs: 100 });

    const failure = await down.issue({ name: 'ok.acme.test', accountKey: await down.createAccountKey(), challenges }).catch((error: unknown) => error);

    expect((failure as IssuanceFailed).reason).toMatch(/could not be reached/);
  });
});
