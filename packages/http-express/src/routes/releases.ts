import { authed, type Route, type RouteContext } from '../routing';
import { configEtag } from '@svc/core';
import { applyReleaseHeaders } from '../headers';
import { notModified } from '../conditional';
import { envelope, pageRequestOf } from '../pagination';
import { AppPath, ReleasePath, pathParams } from '../params';
import { presentBuild, presentConfig, presentRelease } from '../presenters';

/** Config, builds and releases: everything that creates or reads releases. */
export function releaseRoutes({ useCases }: RouteContext): Route[] {
  return [
    authed('get', '/v1/apps/:id/config', async ({ req, res, actor }) => {
      const { id } = pathParams(AppPath, req);
      const { config, release } = await useCases.getConfig.execute(actor, id);
      if (notModified(req, res, configEtag(config))) return;
      res.json(presentConfig(config, release.version));
    }),
    authed('post', '/v1/apps/:id/config', async ({ req, res, actor, body, policy }) => {
      const { id } = pathParams(AppPath, req);
      const { config, release } = await useCases.setConfig.execute(actor, id, body);
      applyReleaseHeaders(res, policy, release.version);
      res.status(201).json(presentConfig(config, release.version));
    }),
    authed('get', '/v1/apps/:id/builds', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listBuilds.execute(actor, id, page), presentBuild));
    }),
    authed('post', '/v1/apps/:id/builds', async ({ req, res, actor, body, policy }) => {
      const { id } = pathParams(AppPath, req);
      const { build, release } = await useCases.createBuild.execute(actor, id, body);
      applyReleaseHeaders(res, policy, release.version);
      res.status(201).json(presentBuild(build));
    }),
    authed('get', '/v1/apps/:id/releases', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listReleases.execute(actor, id, page), presentRelease));
    }),
    authed('post', '/v1/apps/:id/releases/rollback', async ({ req, res, actor, body, policy }) => {
      const { id } = pathParams(AppPath, req);
      const { release } = await useCases.rollback.execute(actor, id, body);
      // A rollback creates a release like a config change or a build: announce it the same way.
      applyReleaseHeaders(res, policy, release.version);
      res.status(201).json({ version: release.version });
    }),
    authed('get', '/v1/apps/:id/releases/v:version', async ({ req, res, actor }) => {
      const { id, version } = pathParams(ReleasePath, req);
      res.json(presentRelease(await useCases.getRelease.execute(actor, id, Number(version))));
    }),
  ];
}
