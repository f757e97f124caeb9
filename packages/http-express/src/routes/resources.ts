import { authed, type Route, type RouteContext } from '../routing';
import { envelope, pageRequestOf } from '../pagination';
import { AppPath, AppUserPath, CertificatePath, DomainPath, KeyPath, pathParams } from '../params';
import { presentAppTls, presentCertificate, presentCertificateItem, presentDomain, presentKey } from '../presenters';

/** Domains, keys, app permissions and certificates. */
export function resourceRoutes({ useCases }: RouteContext): Route[] {
  const revokePermission = authed('delete', '/v1/apps/:id/perms/:username', async ({ req, res, actor }) => {
    const { id, username } = pathParams(AppUserPath, req);
    await useCases.revokePermission.execute(actor, id, username);
    res.status(204).end();
  });
  return [
    authed('get', '/v1/apps/:id/domains', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listDomains.execute(actor, id, page), presentDomain));
    }),
    authed('post', '/v1/apps/:id/domains', async ({ req, res, actor, body }) => {
      const { id } = pathParams(AppPath, req);
      res.status(201).json(presentDomain(await useCases.addDomain.execute(actor, id, body)));
    }),
    authed('delete', '/v1/apps/:id/domains/:domain', async ({ req, res, actor }) => {
      const { id, domain } = pathParams(DomainPath, req);
      await useCases.removeDomain.execute(actor, id, domain);
      res.status(204).end();
    }),
    authed('get', '/v1/apps/:id/tls', async ({ req, res, actor }) => {
      const { id } = pathParams(AppPath, req);
      res.json(presentAppTls(await useCases.getAppTls.execute(actor, id)));
    }),
    authed('post', '/v1/apps/:id/tls', async ({ req, res, actor, body }) => {
      const { id } = pathParams(AppPath, req);
      res.json(presentAppTls(await useCases.setAppTls.execute(actor, id, body)));
    }),
    authed('get', '/v1/keys', async ({ req, res, actor, policy }) => {
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listKeys.execute(actor, page), presentKey));
    }),
    authed('post', '/v1/keys', async ({ res, actor, body }) => {
      res.status(201).json(presentKey(await useCases.addKey.execute(actor, body)));
    }),
    authed('delete', '/v1/keys/:id', async ({ req, res, actor }) => {
      const { id } = pathParams(KeyPath, req);
      await useCases.removeKey.execute(actor, id);
      res.status(204).end();
    }),
    authed('get', '/v1/apps/:id/perms', async ({ req, res, actor }) => {
      const { id } = pathParams(AppPath, req);
      res.json({ users: await useCases.listPermissions.execute(actor, id) });
    }),
    authed('post', '/v1/apps/:id/perms', async ({ req, res, actor, body }) => {
      const { id } = pathParams(AppPath, req);
      await useCases.grantPermission.execute(actor, id, body);
      res.status(201).end();
    }),
    revokePermission,
    // The seed revokes with POST to the user's path; it answers exactly like DELETE.
    { ...revokePermission, method: 'post' },
    authed(
      'get',
      '/v1/certs',
      async ({ req, res, actor, policy }) => {
        const page = pageRequestOf(req, policy);
        res.json(envelope(req, page, await useCases.listCertificates.execute(actor, page), presentCertificateItem));
      },
      'certs',
    ),
    authed(
      'post',
      '/v1/certs',
      async ({ res, actor, body, version }) => {
        res.status(201).json(presentCertificate(await useCases.addCertificate.execute(actor, body, version)));
      },
      'certs',
    ),
    authed(
      'get',
      '/v1/certs/:common_name',
      async ({ req, res, actor }) => {
        const { common_name } = pathParams(CertificatePath, req);
        res.json(presentCertificate(await useCases.getCertificate.execute(actor, common_name)));
      },
      'certs',
    ),
    authed(
      'delete',
      '/v1/certs/:common_name',
      async ({ req, res, actor }) => {
        const { common_name } = pathParams(CertificatePath, req);
        await useCases.removeCertificate.execute(actor, common_name);
        res.status(204).end();
      },
      'certs',
    ),
  ];
}
