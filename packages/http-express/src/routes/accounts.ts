import { authed, open, openWithCaller, requestContextOf, type Route, type RouteContext } from '../routing';
import { envelope, pageRequestOf } from '../pagination';
import { UsernamePath, pathParams } from '../params';
import { presentAdmin, presentUser } from '../presenters';

/** Registration, login, tokens, passwords, account deletion, user listing and administrators. */
export function accountRoutes({ useCases }: RouteContext): Route[] {
  return [
    openWithCaller('post', '/v1/auth/register', async ({ req, res, actor, body }) => {
      const user = await useCases.registerUser.execute(body, actor, requestContextOf(req, res));
      res.status(201).json(presentUser(user));
    }),
    open('post', '/v1/auth/login', async ({ req, res, body }) => {
      // req.ip is the peer's address, or with `trust proxy` the client's as the proxy reports it.
      const { token } = await useCases.login.execute(body, req.ip ?? req.socket.remoteAddress ?? '', requestContextOf(req, res));
      res.status(200).json({ token });
    }),
    authed('delete', '/v1/auth/cancel', async ({ res, actor, body, version }) => {
      await useCases.cancelAccount.execute(actor, body, version);
      res.status(204).end();
    }),
    authed(
      'post',
      '/v1/auth/tokens',
      async ({ res, actor, body }) => {
        const { token } = await useCases.regenerateToken.execute(actor, body);
        res.status(200).json({ token });
      },
      'tokens',
    ),
    authed(
      'post',
      '/v1/auth/passwd',
      async ({ res, actor, body, version }) => {
        await useCases.changePassword.execute(actor, body, version);
        res.status(200).end();
      },
      'passwd',
    ),
    authed(
      'get',
      '/v1/users',
      async ({ req, res, actor, policy }) => {
        const page = pageRequestOf(req, policy);
        res.json(envelope(req, page, await useCases.listUsers.execute(actor, page), presentUser));
      },
      'users',
    ),
    authed('get', '/v1/admin/perms', async ({ req, res, actor, policy }) => {
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listAdmins.execute(actor, page), presentAdmin));
    }),
    authed('post', '/v1/admin/perms', async ({ res, actor, body }) => {
      await useCases.grantAdmin.execute(actor, body);
      res.status(201).end();
    }),
    authed('delete', '/v1/admin/perms/:username', async ({ req, res, actor }) => {
      const { username } = pathParams(UsernamePath, req);
      await useCases.revokeAdmin.execute(actor, username);
      res.status(204).end();
    }),
  ];
}
