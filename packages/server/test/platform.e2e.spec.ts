import { describeEachBackend, signUp, useServer } from './support';

/*
 * GET /v1/platform/ through a running controller: the ports as bound (ROUTER_PORT=0 and
 * GIT_SSH_PORT=0 are any free ones, known only once listening), and the public address an
 * operator sets when the router is published elsewhere.
 */
describeEachBackend('where the apps and the git server are reached', (backend) => {
  describe('by default', () => {
    const server = useServer(backend, { GIT_SSH_PORT: '0' });

    it("answers the router's bound HTTP port and the git server's, by the host the API was reached at", async () => {
      const { api } = await signUp(server.api, 'alice');
      const { routerPort, gitPort } = server.current;
      expect(routerPort).toBeGreaterThan(0);
      expect(gitPort).toBeGreaterThan(0);
      const res = await api.get('/v1/platform/');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        platform_domain: 'localhost',
        apps: { scheme: 'http', port: routerPort, url_template: `http://{app}.localhost:${routerPort}` },
        git: { host: '127.0.0.1', port: gitPort, remote_template: `ssh://git@127.0.0.1:${gitPort}/{app}.git` },
      });
    });
  });

  describe('behind a proxy that ends TLS (APPS_URL_SCHEME=https)', () => {
    const server = useServer(backend, { APPS_URL_SCHEME: 'https', PLATFORM_DOMAIN: 'apps.test' });

    it('answers https on 443, whatever port the router listens on, and no git server when it is off', async () => {
      const { api } = await signUp(server.api, 'alice');
      const res = await api.get('/v1/platform/');
      expect(res.body).toEqual({ platform_domain: 'apps.test', apps: { scheme: 'https', port: 443, url_template: 'https://{app}.apps.test' }, git: null });
    });
  });

  describe('with ROUTER_PORT=off (another process runs the router) and APPS_URL_PORT', () => {
    const server = useServer(backend, { ROUTER_PORT: 'off', APPS_URL_PORT: '80' });

    it('answers http on that port, shown without it', async () => {
      const { api } = await signUp(server.api, 'alice');
      const res = await api.get('/v1/platform/');
      expect(res.body).toMatchObject({ apps: { scheme: 'http', port: 80, url_template: 'http://{app}.localhost' } });
    });
  });
});
