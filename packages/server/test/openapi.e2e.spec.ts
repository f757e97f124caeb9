import { describeEachBackend, signUp, useServer, type ApiClient, type HttpResponse, type Session } from './support';
import { ecdsaPair } from './support/certs';
import { ContractValidator } from './support/openapi';
import { ed25519PublicKey } from './support/ssh-keys';

type Method = 'GET' | 'POST' | 'DELETE';

/*
 * The OpenAPI document against the running controller: one walk through every operation
 * (at 1.7, and where the shape differs at older versions too), every real response checked
 * against the document the server itself serves. At the end every documented operation must
 * have answered its documented success at least once.
 */
describeEachBackend('OpenAPI document against real responses', (backend) => {
  const server = useServer(backend, { SCHEDULER: 'memory' });
  let contract: ContractValidator;
  let root: Session;
  let alice: Session;

  async function call(client: ApiClient, method: Method, path: string, body?: unknown, version?: string): Promise<HttpResponse<unknown>> {
    const res = await client.request<unknown>(method, path, { json: body, ...(version === undefined ? {} : { version }) });
    contract.check(method, path, res);
    return res;
  }
  const expectStatus = (res: HttpResponse<unknown>, status: number): void => {
    expect([res.status, res.text.slice(0, 300)]).toEqual([status, expect.anything()]);
  };

  beforeAll(async () => {
    const doc = await server.api.get<Record<string, unknown>>('/v1/openapi.json');
    expect(doc.status).toBe(200);
    contract = new ContractValidator(doc.body as never);
    contract.check('GET', '/v1/openapi.json', doc as HttpResponse<unknown>);
    root = await signUp(server.api, 'root');
    alice = await signUp(server.api, 'alice');
  });

  it('probes and the API root', async () => {
    expectStatus(await call(server.api, 'GET', '/healthz'), 200);
    expectStatus(await call(server.api, 'GET', '/readyz'), 200);
    expectStatus(await call(server.api, 'GET', '/v1/'), 401);
    expectStatus(await call(alice.api, 'GET', '/v1/'), 200);
    expectStatus(await call(server.api, 'GET', '/v1/platform/'), 401);
    const platform = await call(alice.api, 'GET', '/v1/platform/');
    expectStatus(platform, 200);
    expect(platform.body).toMatchObject({ apps: { scheme: 'http', port: server.current.routerPort }, git: null });
  });

  it('accounts, tokens, passwords, users and administrators', async () => {
    expectStatus(await call(server.api, 'POST', '/v1/auth/register/', { username: 'carol', password: 'carol-Secret1', email: 'carol@example.com' }), 201);
    expectStatus(await call(server.api, 'POST', '/v1/auth/register/', { username: 'bad name', password: '', email: 'x' }), 400);
    const login = await call(server.api, 'POST', '/v1/auth/login/', { username: 'carol', password: 'carol-Secret1' });
    expectStatus(login, 200);
    const carol = server.api.as((login.body as { token: string }).token);
    expectStatus(await call(server.api, 'POST', '/v1/auth/login/', { username: 'carol', password: 'wrong' }), 400);
    const token = await call(carol, 'POST', '/v1/auth/tokens/');
    expectStatus(token, 200);
    const carolNow = server.api.as((token.body as { token: string }).token);
    expectStatus(await call(carolNow, 'POST', '/v1/auth/passwd/', { password: 'carol-Secret1', new_password: 'carol-Secret2' }), 200);
    expectStatus(await call(root.api, 'GET', '/v1/users/'), 200);
    expectStatus(await call(alice.api, 'GET', '/v1/users/'), 403);
    expectStatus(await call(root.api, 'POST', '/v1/admin/perms/', { username: 'carol' }), 201);
    expectStatus(await call(root.api, 'GET', '/v1/admin/perms/'), 200);
    expectStatus(await call(root.api, 'DELETE', '/v1/admin/perms/carol'), 204);
    expectStatus(await call(carolNow, 'DELETE', '/v1/auth/cancel/'), 204);
    expectStatus(await call(carolNow, 'GET', '/v1/apps'), 401);
  });

  it('apps, config, builds, releases, processes, run and logs', async () => {
    const api = alice.api;
    expectStatus(await call(api, 'POST', '/v1/apps/', { id: 'contract' }), 201);
    expectStatus(await call(api, 'POST', '/v1/apps/', { id: 'Not Valid' }), 400);
    expectStatus(await call(api, 'GET', '/v1/apps'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/nothing-here/'), 404);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/config/'), 200);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/scale/', { web: 1 }, '1.0'), 400);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/config/', { values: { FOO: 'bar' }, memory: { web: '512M' }, cpu: { web: 100 }, tags: { rack: 'a1' } }), 201);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/config/', { values: { SVC_APP: 'other' } }), 400);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/builds/', { image: 'example/web:1', procfile: { web: 'serve', worker: 'work' } }), 201);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/builds/'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/releases/'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/releases/v2/'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/releases/v99/'), 404);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/scale/', { web: 2, worker: 1 }), 204);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/containers/'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/containers/web/'), 200);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/containers/restart/'), 200);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/containers/web/restart/'), 200);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/containers/web/1/restart/'), 200);
    for (const version of ['1.4', '1.7']) expectStatus(await call(api, 'POST', '/v1/apps/contract/run/', { command: 'ls' }, version), 200);
    for (const version of ['1.6', '1.7']) expectStatus(await call(api, 'GET', '/v1/apps/contract/logs/?log_lines=5', undefined, version), 200);
    // v2 is a config change made before the first build (v3): rolling back to it would stop the app.
    expectStatus(await call(api, 'POST', '/v1/apps/contract/releases/rollback/', { version: 2 }), 409);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/releases/rollback/', { version: 3 }), 201);
  });

  it('domains, keys, permissions, certificates, transfer and deletion', async () => {
    const api = alice.api;
    expectStatus(await call(api, 'POST', '/v1/apps/contract/domains/', { domain: 'www.contract.example.com' }), 201);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/domains/'), 200);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/tls/'), 200);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/tls/', { https_redirect: true }), 200);
    expectStatus(await call(api, 'DELETE', '/v1/apps/contract/domains/www.contract.example.com'), 204);
    expectStatus(await call(api, 'POST', '/v1/keys/', { id: 'laptop', public: ed25519PublicKey() }), 201);
    expectStatus(await call(api, 'GET', '/v1/keys/'), 200);
    expectStatus(await call(api, 'DELETE', '/v1/keys/laptop'), 204);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/perms/', { username: 'root' }), 201);
    expectStatus(await call(api, 'GET', '/v1/apps/contract/perms/'), 200);
    expectStatus(await call(api, 'DELETE', '/v1/apps/contract/perms/root'), 204);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/perms/', { username: 'root' }), 201);
    expectStatus(await call(api, 'POST', '/v1/apps/contract/perms/root'), 204);
    // A certificate is taken only for names of the uploader's apps.
    for (const domain of ['ec.example.com', 'www.ec.example.com']) expectStatus(await call(api, 'POST', '/v1/apps/contract/domains/', { domain }), 201);
    expectStatus(await call(api, 'POST', '/v1/certs/', ecdsaPair()), 201);
    expectStatus(await call(api, 'GET', '/v1/certs/'), 200);
    const name = ((await call(api, 'GET', '/v1/certs/')).body as { results: Array<{ common_name: string }> }).results[0]?.common_name ?? '';
    expectStatus(await call(api, 'GET', `/v1/certs/${name}`), 200);
    expectStatus(await call(api, 'DELETE', `/v1/certs/${name}`), 204);
    expectStatus(await call(api, 'POST', '/v1/apps/', { id: 'handed-over' }), 201);
    expectStatus(await call(api, 'POST', '/v1/apps/handed-over/', { owner: 'root' }), 200);
    expectStatus(await call(api, 'DELETE', '/v1/apps/contract/'), 204);
  });

  it('the extensions: events, the event stream and webhooks with their deliveries', async () => {
    const api = alice.api;
    expectStatus(await call(api, 'POST', '/v1/apps/', { id: 'hooked' }), 201);
    expectStatus(await call(api, 'GET', '/v1/events/?action=app'), 200);
    expectStatus(await call(root.api, 'GET', '/v1/events/'), 200);
    expectStatus(await call(api, 'GET', '/v1/events/?since=never'), 400);
    expectStatus(await call(api, 'GET', '/v1/apps/hooked/events/'), 200);
    const created = await call(api, 'POST', '/v1/apps/hooked/webhooks/', { url: 'http://127.0.0.1:9/hook', events: ['config'] });
    expectStatus(created, 201);
    const uuid = (created.body as { uuid: string }).uuid;
    expectStatus(await call(api, 'POST', '/v1/apps/hooked/webhooks/', { url: 'gopher://x', events: ['config'] }), 400);
    expectStatus(await call(api, 'GET', '/v1/apps/hooked/webhooks/'), 200);
    expectStatus(await call(api, 'GET', `/v1/apps/hooked/webhooks/${uuid}/`), 200);
    expectStatus(await call(api, 'POST', '/v1/apps/hooked/config/', { values: { A: '1' } }), 201);
    expectStatus(await call(api, 'GET', `/v1/apps/hooked/webhooks/${uuid}/deliveries/`), 200);
    expectStatus(await call(api, 'DELETE', `/v1/apps/hooked/webhooks/${uuid}/`), 204);
    expectStatus(await call(api, 'GET', `/v1/apps/hooked/webhooks/${uuid}/`), 404);
  });

  it('every documented operation answered its documented success', async () => {
    const doc = (await server.api.get<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>('/v1/openapi.json')).body;
    const missing: string[] = [];
    for (const [template, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const success = Object.keys(operation.responses).find((s) => s.startsWith('2'));
        if (!contract.seen.has(`${method.toUpperCase()} ${template} ${success}`)) missing.push(`${method.toUpperCase()} ${template} ${success}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
