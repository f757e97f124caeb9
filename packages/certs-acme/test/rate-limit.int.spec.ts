import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IssuanceFailed } from '@svc/core';
import { AcmeCertificateAuthority } from '../src';

jest.setTimeout(60_000);

/*
 * Pebble has no rate limits: an ACME server of the test's own (plain HTTP on loopback) takes
 * the account and answers every new order 429 `rateLimited` with a Retry-After, as Let's
 * Encrypt does once the account's limit of new orders is reached.
 */

const RETRY_AFTER_SECONDS = 3600;

function acmeServer(): Server {
  let nonce = 0;
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const base = `http://${req.headers.host}`;
      res.setHeader('Replay-Nonce', `nonce-${(nonce += 1)}`);
      res.setHeader('Cache-Control', 'no-store');
      const json = (status: number, body: unknown, type = 'application/json'): void => {
        res.writeHead(status, { 'Content-Type': type }).end(JSON.stringify(body));
      };
      if (req.url === '/dir') return json(200, { newNonce: `${base}/nonce`, newAccount: `${base}/account`, newOrder: `${base}/order` });
      if (req.url === '/nonce') return void res.writeHead(200).end();
      if (req.url === '/account') {
        res.setHeader('Location', `${base}/account/1`);
        return json(201, { status: 'valid', orders: `${base}/account/1/orders` });
      }
      if (req.url === '/order') {
        res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
        return json(
          429,
          { type: 'urn:ietf:params:acme:error:rateLimited', detail: 'too many new orders (300) from this account in the last 3h0m0s', status: 429 },
          'application/problem+json',
        );
      }
      return json(404, { type: 'urn:ietf:params:acme:error:malformed', detail: 'not found', status: 404 }, 'application/problem+json');
    });
  });
}

describe('AcmeCertificateAuthority against a rate-limited ACME server', () => {
  let server: Server;

  beforeAll(async () => {
    server = acmeServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('fails the issuance as rate limited, with the server\'s detail and Retry-After, without sleeping through it', async () => {
    const directory = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dir`;
    const authority = new AcmeCertificateAuthority({ directory });
    const before = Date.now();
    const failure = await authority
      .issue({ name: 'www.shop.test', accountKey: await authority.createAccountKey(), challenges: { publish: async () => undefined, withdraw: async () => undefined } })
      .then(
        () => null,
        (error: unknown) => error,
      );

    expect(failure).toBeInstanceOf(IssuanceFailed);
    const failed = failure as IssuanceFailed;
    expect(failed.rateLimited).toBe(true);
    expect(failed.reason).toMatch(/too many new orders/);
    const retryAfter = failed.retryAfter?.getTime() ?? 0;
    expect(retryAfter).toBeGreaterThanOrEqual(before + RETRY_AFTER_SECONDS * 1000 - 1000);
    expect(retryAfter).toBeLessThanOrEqual(Date.now() + RETRY_AFTER_SECONDS * 1000 + 1000);
    expect(Date.now() - before).toBeLessThan(30_000);
  });
});
