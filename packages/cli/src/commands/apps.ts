import { execFileSync } from 'node:child_process';
import { seg } from '../api';
import { appOption, type Registrar } from '../command';
import { GIT_REMOTE, appOfCheckout, appUrlOf, gitUrlOf, type Context } from '../context';
import { UsageError } from '../errors';
import { print, printFields, printJson, printTable, prompt, withProgress } from '../output';

/** An application as the API shows it. */
export interface AppJson {
  id: string;
  uuid: string;
  owner: string;
  structure: Record<string, number>;
  url: string;
  created: string;
  updated: string;
}

function git(args: string[]): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim() };
  } catch (error) {
    return { ok: false, output: String((error as { stderr?: string }).stderr ?? (error as Error).message).trim() };
  }
}

const insideCheckout = (): boolean => git(['rev-parse', '--is-inside-work-tree']).output === 'true';

async function confirmed(ctx: Context, app: string, given: unknown): Promise<void> {
  if (given !== undefined) {
    if (given !== app) throw new UsageError(`--confirm ${String(given)} does not match the app ${app}`);
    return;
  }
  if (!ctx.io.in.isTTY) throw new UsageError(`destroying ${app} needs --confirm ${app} when not on a terminal`);
  ctx.io.err.write(`This destroys ${app}: its config, builds, releases, processes, domains and logs.\n`);
  const answer = await prompt(ctx.io, `Type the app name (${app}) to confirm: `);
  if (answer.trim() !== app) throw new UsageError('not confirmed: nothing was destroyed');
}

/** apps, apps:create, apps:info, apps:destroy, apps:transfer. */
export function registerApps(r: Registrar): void {
  r.command(
    'apps',
    'list the apps you can see',
    async (ctx) => {
      const apps = await ctx.authed().all<AppJson>('/v1/apps/');
      if (ctx.json) printJson(ctx.io, apps);
      else printTable(ctx.io, ['app', 'owner', 'url'], apps.map((a) => [a.id, a.owner, appUrlOf(a.url, ctx.session.routerPort)]), 'no apps: create one with `svc apps:create`');
    },
    (c) => c.alias('apps:list'),
  );

  r.command(
    'apps:create [name]',
    'create an app (a name is generated when none is given) and, inside a git checkout, add the `svc` git remote',
    async (ctx, [name], options) => {
      const api = ctx.authed();
      const app = await api.post<AppJson>('/v1/apps/', name === undefined ? {} : { id: name });
      const remote = typeof options.remote === 'string' ? options.remote : GIT_REMOTE;
      let remoteNote: string | null = null;
      if (options.remote !== false && insideCheckout()) {
        const url = gitUrlOf(api.baseUrl, ctx.session.gitPort, app.id);
        const added = git(['remote', 'add', remote, url]);
        remoteNote = added.ok ? `Git remote ${remote} added: ${url}` : `Git remote ${remote} not added (${added.output}); add it with: git remote add ${remote} ${url}`;
      }
      if (ctx.json) printJson(ctx.io, app);
      else {
        print(ctx.io, `Created ${app.id}: ${appUrlOf(app.url, ctx.session.routerPort)}`);
        if (remoteNote !== null) print(ctx.io, remoteNote);
      }
    },
    (c) =>
      c
        .alias('create')
        .option('--remote <name>', `name of the git remote to add (default ${GIT_REMOTE})`)
        .option('--no-remote', 'do not add a git remote'),
  );

  r.command(
    'apps:info',
    'show an app, its processes and its domains',
    async (ctx) => {
      const api = ctx.authed();
      const id = ctx.app();
      const app = await api.get<AppJson>(`/v1/apps/${seg(id)}/`);
      const containers = await api.all<{ type: string; num: number; state: string; release: string }>(`/v1/apps/${seg(id)}/containers/`);
      const domains = await api.all<{ domain: string }>(`/v1/apps/${seg(id)}/domains/`);
      if (ctx.json) {
        printJson(ctx.io, { app, containers, domains });
        return;
      }
      printFields(ctx.io, [
        ['app', app.id],
        ['owner', app.owner],
        ['url', appUrlOf(app.url, ctx.session.routerPort)],
        ['structure', Object.entries(app.structure).map(([t, n]) => `${t}=${n}`).join(' ') || '(none)'],
        ['created', app.created],
        ['updated', app.updated],
        ['uuid', app.uuid],
      ]);
      print(ctx.io, '', '=== processes');
      printTable(ctx.io, ['process', 'state', 'release'], containers.map((c) => [`${c.type}.${c.num}`, c.state, c.release]), 'no processes');
      print(ctx.io, '', '=== domains');
      printTable(ctx.io, ['domain'], domains.map((d) => [d.domain]), 'no domains');
    },
    (c) => {
      c.alias('info');
      appOption(c);
    },
  );

  r.command(
    'apps:destroy',
    'destroy an app and everything under it (asks to confirm, or --confirm <app>)',
    async (ctx, _args, options) => {
      const api = ctx.authed();
      const id = ctx.app();
      await confirmed(ctx, id, options.confirm);
      await withProgress(ctx.io, `Destroying ${id}`, () => api.delete(`/v1/apps/${seg(id)}/`));
      // The checkout's remote pointed at the app that is gone.
      if (appOfCheckout(process.cwd()) === id) git(['remote', 'remove', GIT_REMOTE]);
      if (ctx.json) printJson(ctx.io, { destroyed: id });
      else print(ctx.io, `Destroyed ${id}`);
    },
    (c) => {
      c.alias('destroy').option('--confirm <app>', 'the app name, to confirm without a question');
      appOption(c);
    },
  );

  r.command(
    'apps:transfer <username>',
    'make another user the owner of an app (you lose access unless granted)',
    async (ctx, [username]) => {
      const id = ctx.app();
      const app = await ctx.authed().post<AppJson>(`/v1/apps/${seg(id)}/`, { owner: username });
      if (ctx.json) printJson(ctx.io, app);
      else print(ctx.io, `Transferred ${app.id} to ${app.owner}`);
    },
    appOption,
  );
}
