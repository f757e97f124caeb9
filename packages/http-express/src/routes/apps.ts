import type { Request, Response } from 'express';
import { appEtag } from '@svc/core';
import { notModified } from '../conditional';
import type { Actor, FollowedLog, RestartTarget } from '@svc/core';
import { BoundedLineWriter, followRequested, serveFollow } from '../follow';
import { authed, type Call, type Route, type RouteContext } from '../routing';
import { envelope, pageRequestOf } from '../pagination';
import { AppPath, ContainerPath, ContainerTypePath, pathParams } from '../params';
import { presentApp, presentContainer } from '../presenters';

/** The log lines as one text, one line each, ending with a newline when there is any. */
function logText(lines: readonly string[]): string {
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function restartTarget(req: Request): { id: string; target: RestartTarget } {
  if (req.params.num !== undefined) {
    const { id, type, num } = pathParams(ContainerPath, req);
    return { id, target: { type, num: Number(num) } };
  }
  if (req.params.type !== undefined) {
    const { id, type } = pathParams(ContainerTypePath, req);
    return { id, target: { type } };
  }
  return { id: pathParams(AppPath, req).id, target: {} };
}

/**
 * Streams the last lines and then every new line as chunked `text/plain` (at every API
 * version), until the client disconnects or the server shuts down.
 */
async function followLogs(context: RouteContext, res: Response, actor: Actor, id: string, logLines: unknown): Promise<void> {
  await serveFollow<string[], FollowedLog>(
    context.shutdown,
    res,
    (deliver) => context.useCases.followLogs.execute(actor, id, logLines, deliver),
    (followed) => {
      res.status(200);
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.setHeader('Cache-Control', 'no-cache');
      // Reverse proxies that buffer responses would hold the lines back.
      res.setHeader('X-Accel-Buffering', 'no');
      res.flushHeaders();
      const writer = new BoundedLineWriter(res, context.followBufferBytes);
      writer.write(followed.lines);
      return writer;
    },
  );
}

/** Applications, their logs and one-off runs, containers and scaling. */
export function appRoutes(context: RouteContext): Route[] {
  const { useCases, platformDomain } = context;
  const restart = async ({ req, res, actor }: Call<Actor>): Promise<void> => {
    const { id, target } = restartTarget(req);
    const containers = await useCases.restartContainers.execute(actor, id, target);
    res.status(200).json(containers.map(presentContainer));
  };
  return [
    authed('get', '/v1/apps', async ({ req, res, actor, policy }) => {
      const page = pageRequestOf(req, policy);
      const apps = await useCases.listApps.execute(actor, page);
      res.json(envelope(req, page, apps, (app) => presentApp(app, platformDomain)));
    }),
    authed('post', '/v1/apps', async ({ res, actor, body }) => {
      const app = await useCases.createApp.execute(actor, body);
      res.status(201).json(presentApp(app, platformDomain));
    }),
    authed('get', '/v1/apps/:id', async ({ req, res, actor }) => {
      const { id } = pathParams(AppPath, req);
      const app = await useCases.getApp.execute(actor, id);
      if (notModified(req, res, appEtag(app))) return;
      res.json(presentApp(app, platformDomain));
    }),
    authed(
      'post',
      '/v1/apps/:id',
      async ({ req, res, actor, body }) => {
        const { id } = pathParams(AppPath, req);
        res.status(200).json(presentApp(await useCases.updateApp.execute(actor, id, body), platformDomain));
      },
      'appUpdate',
    ),
    authed('delete', '/v1/apps/:id', async ({ req, res, actor }) => {
      const { id } = pathParams(AppPath, req);
      await useCases.deleteApp.execute(actor, id);
      res.status(204).end();
    }),
    authed('get', '/v1/apps/:id/logs', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      const query = req.query as Record<string, unknown>;
      const logLines = policy.honoursLogLines ? query.log_lines : undefined;
      if (followRequested(query.follow)) {
        await followLogs(context, res, actor, id, logLines);
        return;
      }
      const text = logText(await useCases.getLogs.execute(actor, id, logLines));
      if (policy.logsBody === 'text') res.status(200).type('text/plain; charset=utf-8').send(text);
      else res.status(200).json(text);
    }),
    authed('post', '/v1/apps/:id/run', async ({ req, res, actor, body, policy }) => {
      const { id } = pathParams(AppPath, req);
      const result = await useCases.runCommand.execute(actor, id, body);
      res
        .status(200)
        .json(policy.runResponse === 'array' ? [result.exitCode, result.output] : { rc: result.exitCode, output: result.output });
    }),
    authed('get', '/v1/apps/:id/containers', async ({ req, res, actor, policy }) => {
      const { id } = pathParams(AppPath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listContainers.execute(actor, id, undefined, page), presentContainer));
    }),
    // The restart paths come before `containers/:type`, which would otherwise take `restart` as a type.
    authed('post', '/v1/apps/:id/containers/restart', restart, 'restart'),
    authed('post', '/v1/apps/:id/containers/:type/restart', restart, 'restart'),
    authed('post', '/v1/apps/:id/containers/:type/:num/restart', restart, 'restart'),
    authed('get', '/v1/apps/:id/containers/:type', async ({ req, res, actor, policy }) => {
      const { id, type } = pathParams(ContainerTypePath, req);
      const page = pageRequestOf(req, policy);
      res.json(envelope(req, page, await useCases.listContainers.execute(actor, id, type, page), presentContainer));
    }),
    authed('post', '/v1/apps/:id/scale', async ({ req, res, actor, body }) => {
      const { id } = pathParams(AppPath, req);
      await useCases.scaleApp.execute(actor, id, body);
      res.status(204).end();
    }),
  ];
}
