import { createServer, type AddressInfo, type Server } from 'node:net';
import { AppRouter, RouterCluster, challengeToken, httpsLocation, type ChallengeStore } from '../src';
import { FakeRouteTable, send, startUpstream, type Upstream } from './support';

/** Challenge answers by host and token, as the controller keeps them. */
class FakeChallenges implements ChallengeStore {
  readonly answers = new Map<string, string>();
  async answer(host: string, token: string): Promise<string | null> {
    return this.answers.get(`${host} ${token}`) ?? null;
  }
}

describe('challengeToken and httpsLocation', () => {
  it('finds the token of a challenge path only, and refuses malformed ones', () => {
    expect(challengeToken('/.well-known/acme-challenge/abc_DEF-123')).toBe('abc_DEF-123');
    expect(challengeToken('/.well-known/acme-challenge/abc?x=1')).toBe('abc');
    expect(challengeToken('/.well-known/acme-challenge/../etc')).toBeNull();
    expect(challengeToken('/.well-known/acme-challenge/')).toBeNull();
    expect(challengeToken('/index.html')).toBeUndefined();
  });

  it('keeps host and target, and names the port unless it is 443', () => {
    expect(httpsLocation('shop.example', '/a?b=1', 443)).toBe('https://shop.example/a?b=1');
    expect(httpsLocation('shop.example', '/', 8443)).toBe('https://shop.example:8443/');
    expect(httpsLocation('shop.example', 'http://elsewhere/', 443)).toBe('https://shop.example/');
  });
});

function describeChallenges(title: string, make: (routes: FakeRouteTable, challenges: FakeChallenges) => Promise<{ port: number; close(): Promise<void> }>): void {
  describe(title, () => {
    const routes = new FakeRouteTable();
    const challenges = new FakeChallenges();
    let app: Upstream;
    let router: { port: number; close(): Promise<void> };

    beforeAll(async () => {
      app = await startUpstream('web');
      routes.set('plain.example', 'plain', [app.target]);
      routes.routes.set('secure.example', { app: 'secure', targets: [app.target], httpsRedirect: true });
      challenges.answers.set('secure.example tok-1', 'tok-1.thumbprint');
      router = await make(routes, challenges);
    }, 60_000);

    afterAll(async () => {
      await router.close();
      await app.close();
    });

    it('answers a published challenge itself, on a route that redirects too', async () => {
      const answer = await send(router.port, { host: 'secure.example', path: '/.well-known/acme-challenge/tok-1' });
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('tok-1.thumbprint');
    });

    it('routes a challenge the platform did not publish to the app (its own ACME client), never redirected', async () => {
      const before = app.seen.length;
      for (const [host, path] of [
        ['secure.example', '/.well-known/acme-challenge/apps-own-token'],
        ['plain.example', '/.well-known/acme-challenge/tok-1'],
        ['secure.example', '/.well-known/acme-challenge/a.b'],
      ] as const) {
        const answer = await send(router.port, { host, path });
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.body)).toMatchObject({ url: path });
      }
      expect(app.seen.length).toBe(before + 3);
      expect((await send(router.port, { host: 'nobody.example', path: '/.well-known/acme-challenge/x' })).status).toBe(404);
    });

    it('redirects plain HTTP with 308 to HTTPS for a route that wants it, and routes the others', async () => {
      const redirected = await send(router.port, { host: 'secure.example', method: 'POST', path: '/cart?id=3', body: 'x' });
      expect(redirected.status).toBe(308);
      expect(redirected.headers.location).toBe('https://secure.example:8443/cart?id=3');
      expect((await send(router.port, { host: 'plain.example', path: '/cart' })).status).toBe(200);
    });
  });
}

describeChallenges('AppRouter answering ACME challenges', async (routes, challenges) => {
  const router = new AppRouter({ routes, challenges, httpsPort: 8443 });
  const { port } = await router.listen(0, '127.0.0.1');
  return { port, close: () => router.close(0) };
});

describeChallenges('AppRouter.handleConnection answering ACME challenges (an embedder\'s server)', async (routes, challenges) => {
  const router = new AppRouter({ routes, challenges, httpsPort: 8443 });
  const server: Server = createServer({ allowHalfOpen: true }, router.handleConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      await router.close(0);
      await closed;
    },
  };
});

describeChallenges('RouterCluster answering ACME challenges from its workers', async (routes, challenges) => {
  const cluster = new RouterCluster({ workers: 1, routes, challenges, httpsPort: 8443, logLevel: 'silent' });
  const { port } = await cluster.listen(0, '127.0.0.1');
  return { port, close: () => cluster.close(0) };
});
