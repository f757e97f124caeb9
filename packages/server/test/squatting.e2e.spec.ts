import { describeEachBackend, expectPage, signUp, useServer, type DomainJson, type Session } from './support';

/*
 * A tenant squatting on names that are not theirs: names under another owner's custom
 * domain, and app names that look like the platform's own hosts (ADR 0037).
 */
describeEachBackend('squatting on names', (backend) => {
  const server = useServer(backend);
  let admin: Session;
  let victim: Session;
  let mallory: Session;

  beforeAll(async () => {
    admin = await signUp(server.api, 'root');
    victim = await signUp(server.api, 'victim');
    mallory = await signUp(server.api, 'mallory');
    for (const [owner, app] of [[victim, 'victim-site'], [victim, 'victim-shop'], [mallory, 'mallory-site']] as const) {
      expect((await owner.api.post('/v1/apps/', { id: app })).status).toBe(201);
    }
    expect((await victim.api.post('/v1/apps/victim-site/domains/', { domain: 'victim-corp.test' })).status).toBe(201);
  });

  const domainsOf = async (session: Session, app: string): Promise<string[]> =>
    expectPage<DomainJson>(await session.api.get(`/v1/apps/${app}/domains/`)).results.map((d) => d.domain);

  describe('a name under another owner\'s domain', () => {
    it.each(['shop.victim-corp.test', 'a.b.victim-corp.test', 'WWW.Victim-Corp.Test.'])('%s is refused 403 DOMAIN.NOT_CONTROLLED and nothing is added', async (domain) => {
      const res = await mallory.api.post('/v1/apps/mallory-site/domains/', { domain });

      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: expect.stringMatching(/ is under victim-corp\.test, which an app of another owner holds/) });
      expect(await domainsOf(mallory, 'mallory-site')).toEqual([]);
    });

    it('is accepted for the holder\'s own apps, and names beside it stay free', async () => {
      expect((await victim.api.post('/v1/apps/victim-shop/domains/', { domain: 'shop.victim-corp.test' })).status).toBe(201);
      expect((await mallory.api.post('/v1/apps/mallory-site/domains/', { domain: 'victim-corp-shop.test' })).status).toBe(201);

      expect(await domainsOf(victim, 'victim-shop')).toEqual(['shop.victim-corp.test']);
      expect(await domainsOf(mallory, 'mallory-site')).toEqual(['victim-corp-shop.test']);
    });

    it('is shared by the holder adding it to the other tenant\'s app once granted access; the tenant still cannot add one', async () => {
      expect((await mallory.api.post('/v1/apps/mallory-site/perms/', { username: 'victim' })).status).toBe(201);

      expect((await victim.api.post('/v1/apps/mallory-site/domains/', { domain: 'partner.victim-corp.test' })).status).toBe(201);
      expect((await mallory.api.post('/v1/apps/mallory-site/domains/', { domain: 'more.victim-corp.test' })).status).toBe(403);
      expect((await admin.api.post('/v1/apps/mallory-site/domains/', { domain: 'support.victim-corp.test' })).status).toBe(201);

      expect(await domainsOf(mallory, 'mallory-site')).toEqual(['partner.victim-corp.test', 'support.victim-corp.test', 'victim-corp-shop.test']);
    });
  });

  describe('reserved app names', () => {
    it.each(['dashboard', 'admin', 'api', 'git', 'mail', 'autodiscover', 'autoconfig', 'www'])('%s is refused 400 to a tenant and to an administrator', async (id) => {
      for (const session of [mallory, admin]) {
        expect(await session.api.post('/v1/apps/', { id })).toMatchObject({ status: 400, body: { id: [`${id} is a reserved name.`] } });
      }
      expect((await admin.api.get(`/v1/apps/${id}/`)).status).toBe(404);
    });
  });
});
