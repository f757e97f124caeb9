import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { seg, type ApiClient } from '../api';
import { appOption, type Registrar } from '../command';
import type { Context } from '../context';
import { UsageError } from '../errors';
import { print, printFields, printJson, printTable } from '../output';

/** An event of the audit journal as the API shows it. */
export interface EventJson {
  uuid: string;
  created: string;
  actor: string;
  action: string;
  app: string | null;
  target: string;
  summary: string;
  request_id: string;
  address: string;
}

interface WebhookJson {
  uuid: string;
  app: string;
  owner: string;
  url: string;
  events: string[];
  created: string;
  /** The receiver's health (servers that predate it send none). */
  status?: string;
  failures?: number;
  last_error?: string;
  resumes_at?: string | null;
  secret?: string;
}

interface DeliveryJson {
  uuid: string;
  event: string;
  action: string;
  status: string;
  attempts: number;
  last_code: number | null;
  last_attempt: string | null;
  last_error: string;
  next_attempt: string | null;
  created: string;
}

const eventLine = (e: EventJson): string => `${e.created}  ${e.actor}  ${e.action}  ${e.app ?? '-'}  ${e.summary}`;

/** One Server-Sent Events frame's fields, or null for a comment or a frame without data. */
export function parseSseFrame(frame: string): { id?: string; event?: string; data: string } | null {
  const fields: Record<string, string> = {};
  for (const line of frame.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    fields[name] = name === 'data' && fields.data !== undefined ? `${fields.data}\n${value}` : value;
  }
  return fields.data === undefined ? null : { id: fields.id, event: fields.event, data: fields.data };
}

/**
 * Streams an app's events until interrupted: each event once, reconnecting after a dropped
 * connection with the id of the last event seen (`Last-Event-ID`), so none is lost.
 */
async function follow(ctx: Context, api: ApiClient, app: string): Promise<void> {
  let last: string | undefined;
  for (;;) {
    const response = await api.send('GET', `/v1/apps/${seg(app)}/events/`, { query: { follow: 'true' }, ...(last === undefined ? {} : { headers: { 'Last-Event-ID': last } }) });
    if (response.status >= 300 || response.body === null) {
      // The ordinary path reports the server's reason.
      await api.request('GET', `/v1/apps/${seg(app)}/events/`);
      throw new UsageError(`the controller refused to stream events (${response.status})`);
    }
    let buffer = '';
    try {
      for await (const chunk of Readable.fromWeb(response.body as ReadableStream<Uint8Array>)) {
        buffer += (chunk as Buffer).toString('utf8');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = parseSseFrame(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (frame === null) continue;
          const event = JSON.parse(frame.data) as EventJson;
          last = frame.id ?? event.uuid;
          if (ctx.json) ctx.io.out.write(`${JSON.stringify(event)}\n`);
          else print(ctx.io, eventLine(event));
        }
      }
    } catch {
      // The connection dropped: resume below.
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** events (the audit journal, or one app's stream with --follow) and webhooks, webhooks:add, webhooks:info, webhooks:remove, webhooks:deliveries. */
export function registerEvents(r: Registrar): void {
  r.command(
    'events',
    'list the audit journal (the newest 100; administrators see everything), or with --follow stream one app\'s events until interrupted',
    async (ctx, _args, options) => {
      const api = ctx.authed();
      if (options.follow === true) {
        await follow(ctx, api, ctx.app());
        return;
      }
      const query: Record<string, string> = { page_size: '100' };
      for (const name of ['app', 'actor', 'action', 'since'] as const) {
        if (typeof options[name] === 'string') query[name] = options[name];
      }
      const page = await api.get<{ results: EventJson[] }>('/v1/events/', query);
      if (ctx.json) printJson(ctx.io, page.results);
      else printTable(ctx.io, ['created', 'actor', 'action', 'app', 'summary'], page.results.map((e) => [e.created, e.actor, e.action, e.app ?? '-', e.summary]), 'no events');
    },
    (c) => {
      c.option('--actor <username>', 'only events of this user')
        .option('--action <action>', 'only this action (config.update) or resource (config)')
        .option('--since <instant>', 'only events at or after this ISO 8601 date or instant')
        .option('-f, --follow', "stream the app's new events (with --app, or the app of this checkout)");
      appOption(c);
    },
  );

  r.command(
    'webhooks',
    "list an app's webhooks",
    async (ctx) => {
      const hooks = await ctx.authed().all<WebhookJson>(`/v1/apps/${seg(ctx.app())}/webhooks/`);
      if (ctx.json) printJson(ctx.io, hooks);
      else printTable(ctx.io, ['uuid', 'url', 'events', 'status'], hooks.map((h) => [h.uuid, h.url, h.events.join(','), h.status ?? '']), 'no webhooks');
    },
    (c) => {
      c.alias('webhooks:list');
      appOption(c);
    },
  );

  r.command(
    'webhooks:add <url>',
    'add a webhook: events of the given resources are POSTed to the URL, signed (the secret is shown once)',
    async (ctx, [url], options) => {
      const events = String(options.events ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
      if (events.length === 0) throw new UsageError('--events needs at least one of app, build, release, config, scale, container, domain, cert, perm');
      const body: Record<string, unknown> = { url, events };
      if (typeof options.secret === 'string') body.secret = options.secret;
      const hook = await ctx.authed().post<WebhookJson>(`/v1/apps/${seg(ctx.app())}/webhooks/`, body);
      if (ctx.json) printJson(ctx.io, hook);
      else {
        print(ctx.io, `Added webhook ${hook.uuid} to ${hook.app}: ${hook.url} (${hook.events.join(', ')})`);
        print(ctx.io, `Secret (shown this once; deliveries carry Svc-Webhook-Hmac-SHA256, its base64 HMAC-SHA256 of the body): ${hook.secret ?? ''}`);
      }
    },
    (c) => {
      c.requiredOption('--events <resources>', 'comma-separated: app, build, release, config, scale, container, domain, cert, perm').option('--secret <secret>', 'the signing secret (16 to 255 characters; default: generated)');
      appOption(c);
    },
  );

  r.command(
    'webhooks:info <uuid>',
    'show a webhook',
    async (ctx, [uuid]) => {
      const hook = await ctx.authed().get<WebhookJson>(`/v1/apps/${seg(ctx.app())}/webhooks/${seg(uuid as string)}/`);
      if (ctx.json) printJson(ctx.io, hook);
      else {
        const health: Array<[string, string]> = hook.status === undefined ? [] : [['status', hook.status]];
        // A failing or paused receiver says why, and when it is tried again.
        if (hook.status !== undefined && hook.status !== 'active') {
          health.push(['failures', String(hook.failures ?? 0)], ['last error', hook.last_error ?? ''], ['resumes', hook.resumes_at ?? '']);
        }
        printFields(ctx.io, [['uuid', hook.uuid], ['app', hook.app], ['owner', hook.owner], ['url', hook.url], ['events', hook.events.join(', ')], ['created', hook.created], ...health]);
      }
    },
    appOption,
  );

  r.command(
    'webhooks:remove <uuid>',
    'remove a webhook and its deliveries',
    async (ctx, [uuid]) => {
      await ctx.authed().delete(`/v1/apps/${seg(ctx.app())}/webhooks/${seg(uuid as string)}/`);
      if (!ctx.json) print(ctx.io, `Removed webhook ${uuid as string}`);
    },
    appOption,
  );

  r.command(
    'webhooks:deliveries <uuid>',
    "list a webhook's deliveries, newest first: status, attempts, last answer",
    async (ctx, [uuid]) => {
      const page = await ctx.authed().get<{ results: DeliveryJson[] }>(`/v1/apps/${seg(ctx.app())}/webhooks/${seg(uuid as string)}/deliveries/`, { page_size: '100' });
      if (ctx.json) printJson(ctx.io, page.results);
      else {
        printTable(
          ctx.io,
          ['created', 'action', 'status', 'attempts', 'code', 'error'],
          page.results.map((d) => [d.created, d.action, d.status, d.attempts, d.last_code ?? '-', d.last_error]),
          'no deliveries',
        );
      }
    },
    appOption,
  );
}
