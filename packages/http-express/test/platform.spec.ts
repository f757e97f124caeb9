import request from 'supertest';
import type { PlatformAddresses } from '../src';
import { PLATFORM_DOMAIN, auth, harness, signUp } from './harness';

describe('GET /v1/platform', () => {
  let addresses: PlatformAddresses = { apps: { scheme: 'http', port: 8080 }, gitPort: 2222 };
  const h = harness({ platform: () => addresses });
  let alice: string;
  beforeAll(async () => {
    alice = await signUp(h.app, 'alice');
  });

  it("answers the apps' scheme, port and URL template, and the git remote by the host the API was reached at", async () => {
    addresses = { apps: { scheme: 'http', port: 8080 }, gitPort: 2222 };
    const res = await request(h.app).get('/v1/platform/').set('Host', 'svc.example.com:8000').set('Authorization', auth(alice)).expect(200);
    expect(res.body).toEqual({
      platform_domain: PLATFORM_DOMAIN,
      apps: { scheme: 'http', port: 8080, url_template: `http://{app}.${PLATFORM_DOMAIN}:8080` },
      git: { host: 'svc.example.com', port: 2222, remote_template: 'ssh://git@svc.example.com:2222/{app}.git' },
    });
  });

  it('reads the addresses at each request, leaves out a default port, and answers null for what is not there', async () => {
    addresses = { apps: { scheme: 'https', port: 443 }, gitPort: null };
    const res = await request(h.app).get('/v1/platform').set('Host', 'svc.example.com').set('Authorization', auth(alice)).expect(200);
    expect(res.body).toEqual({ platform_domain: PLATFORM_DOMAIN, apps: { scheme: 'https', port: 443, url_template: `https://{app}.${PLATFORM_DOMAIN}` }, git: null });
    addresses = { apps: null, gitPort: null };
    const none = await request(h.app).get('/v1/platform').set('Host', 'svc.example.com').set('Authorization', auth(alice)).expect(200);
    expect(none.body).toMatchObject({ apps: null, git: null });
  });

  it('asks for a token, at every version (an extension, like the API root)', async () => {
    await request(h.app).get('/v1/platform/').set('Host', 'svc.example.com').expect(401);
    await request(h.app).get('/v1/platform/').set('Host', 'svc.example.com').set('SVC_API_VERSION', '1.0').set('Authorization', auth(alice)).expect(200);
  });

  it('knows neither when the embedding application gives no addresses', async () => {
    const bare = harness();
    const token = await signUp(bare.app, 'bob');
    const res = await request(bare.app).get('/v1/platform/').set('Host', 'svc.example.com').set('Authorization', auth(token)).expect(200);
    expect(res.body).toEqual({ platform_domain: PLATFORM_DOMAIN, apps: null, git: null });
  });
});
