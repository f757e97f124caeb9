import { Readable } from 'node:stream';
import { seg } from '../api';
import { appOption, type Registrar } from '../command';
import type { Context } from '../context';
import { UsageError } from '../errors';
import { print, printJson, printTable, withProgress } from '../output';

export interface ContainerJson {
  type: string;
  num: number;
  state: string;
  release: string;
  created: string;
}

function printContainers(ctx: Context, containers: readonly ContainerJson[]): void {
  if (ctx.json) printJson(ctx.io, containers);
  else printTable(ctx.io, ['process', 'state', 'release', 'created'], containers.map((c) => [`${c.type}.${c.num}`, c.state, c.release, c.created]), 'no processes');
}

/**
 * One line after a scale: the counts asked for and the processes now running, e.g.
 * `Scaled hello: web=2 (now web.1 up, web.2 up)`. Not the table: `svc ps` prints that, and
 * `svc ps:scale web=2 && svc ps` would show it twice.
 */
export function scaledSummary(app: string, counts: Record<string, number>, containers: readonly ContainerJson[]): string {
  const asked = Object.entries(counts).map(([type, n]) => `${type}=${n}`).join(' ');
  const running = containers.map((c) => `${c.type}.${c.num} ${c.state}`).join(', ');
  return `Scaled ${app}: ${asked} (now ${running === '' ? 'no processes' : running})`;
}

/** ps, ps:scale, ps:restart, logs, run. */
export function registerProcesses(r: Registrar): void {
  r.command(
    'ps [type]',
    "list an app's processes (of one type when given)",
    async (ctx, [type]) => {
      const app = ctx.app();
      const path = type === undefined ? `/v1/apps/${seg(app)}/containers/` : `/v1/apps/${seg(app)}/containers/${seg(type)}/`;
      printContainers(ctx, await ctx.authed().all<ContainerJson>(path));
    },
    (c) => {
      c.alias('ps:list');
      appOption(c);
    },
  );

  r.command(
    'ps:scale <counts...>',
    'set how many processes of each type run (TYPE=N ...)',
    async (ctx, args) => {
      const app = ctx.app();
      const counts: Record<string, number> = {};
      for (const arg of args) {
        const match = /^([^=]+)=(\d+)$/.exec(arg);
        if (match?.[1] === undefined) throw new UsageError(`expected TYPE=N, got ${arg}`);
        counts[match[1]] = Number(match[2]);
      }
      const api = ctx.authed();
      await withProgress(ctx.io, `Scaling ${app} (${args.join(' ')})`, () => api.post(`/v1/apps/${seg(app)}/scale/`, counts));
      const containers = await api.all<ContainerJson>(`/v1/apps/${seg(app)}/containers/`);
      if (ctx.json) printJson(ctx.io, containers);
      else print(ctx.io, scaledSummary(app, counts, containers));
    },
    (c) => {
      c.alias('scale');
      appOption(c);
    },
  );

  r.command(
    'ps:restart [process]',
    'restart all processes, one type (web) or one process (web.1)',
    async (ctx, [target]) => {
      const app = ctx.app();
      let path = `/v1/apps/${seg(app)}/containers/`;
      if (target !== undefined) {
        const match = /^([a-z0-9_-]+)(?:\.(\d+))?$/.exec(target);
        if (match?.[1] === undefined) throw new UsageError(`expected TYPE or TYPE.NUM, got ${target}`);
        path += `${seg(match[1])}/${match[2] === undefined ? '' : `${match[2]}/`}`;
      }
      const restarted = await withProgress(ctx.io, `Restarting ${target ?? 'all processes'} of ${app}`, () =>
        ctx.authed().post<ContainerJson[]>(`${path}restart/`),
      );
      printContainers(ctx, restarted);
    },
    (c) => {
      c.alias('restart');
      appOption(c);
    },
  );

  r.command(
    'logs',
    "print an app's log (the last lines, or --follow to stream new ones until interrupted)",
    async (ctx, _args, options) => {
      const app = ctx.app();
      const query: Record<string, string> = {};
      if (options.lines !== undefined) {
        const lines = Number(options.lines);
        if (!Number.isInteger(lines) || lines < 1) throw new UsageError(`--lines must be a positive integer: ${String(options.lines)}`);
        query.log_lines = String(lines);
      }
      if (options.follow !== true) {
        ctx.io.out.write((await ctx.authed().request('GET', `/v1/apps/${seg(app)}/logs/`, { query })).text);
        return;
      }
      query.follow = 'true';
      const response = await ctx.authed().send('GET', `/v1/apps/${seg(app)}/logs/`, { query });
      if (response.status >= 300 || response.body === null) {
        // Let the ordinary path report the server's reason.
        await ctx.authed().request('GET', `/v1/apps/${seg(app)}/logs/`, { query: { ...query, follow: 'false' } });
        return;
      }
      const stream = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
      for await (const chunk of stream) ctx.io.out.write(chunk as Buffer);
    },
    (c) => {
      c.option('-n, --lines <n>', 'how many of the last lines').option('-f, --follow', 'keep streaming new lines');
      appOption(c);
    },
  );

  r.command(
    'run <command...>',
    'run a one-off command in the app\'s environment and print its output; exits with its exit code (put -- before a command with options)',
    async (ctx, words) => {
      const app = ctx.app();
      const command = words.join(' ');
      const body = await withProgress(ctx.io, `Running \`${command}\` on ${app}`, () =>
        ctx.authed().post<[number, string] | { rc: number; output: string }>(`/v1/apps/${seg(app)}/run/`, { command }),
      );
      const [rc, output] = Array.isArray(body) ? body : [body.rc, body.output];
      if (ctx.json) printJson(ctx.io, { rc, output });
      else ctx.io.out.write(output);
      // The remote command's exit code is the client's, as far as a process can carry it.
      return rc >= 0 && rc <= 255 ? rc : 1;
    },
    (c) => {
      c.allowUnknownOption();
      appOption(c);
    },
  );
}
