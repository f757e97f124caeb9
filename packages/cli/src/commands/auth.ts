import type { Registrar } from '../command';
import type { Context } from '../context';
import { ApiError, UsageError } from '../errors';
import { print, printJson, printTable, prompt } from '../output';
import { DEFAULT_GIT_PORT, DEFAULT_ROUTER_PORT, readClientFile, updateProfile, writeClientFile } from '../profile';

async function ask(ctx: Context, given: unknown, question: string, what: string, hidden = false): Promise<string> {
  if (typeof given === 'string' && given !== '') return given;
  if (!ctx.io.in.isTTY) throw new UsageError(`${what} is required (give it as an option when not on a terminal)`);
  const answer = await prompt(ctx.io, question, hidden);
  if (answer === '') throw new UsageError(`${what} is required`);
  return answer;
}

function controllerUrl(ctx: Context, given: string | undefined): string {
  const url = given ?? ctx.session.url;
  if (url === undefined) throw new UsageError('give the controller URL, e.g. `svc login http://127.0.0.1:8000`');
  const withScheme = /^https?:\/\//.test(url) ? url : `http://${url}`;
  try {
    return new URL(withScheme).toString().replace(/\/+$/, '');
  } catch {
    throw new UsageError(`not a URL: ${url}`);
  }
}

function portOption(flag: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`${flag} must be a port number: ${String(value)}`);
  return port;
}

/** The platform's ports given to login or register: kept in the profile. */
interface Ports {
  gitPort: number | undefined;
  routerPort: number | undefined;
}

const portsOf = (options: Record<string, unknown>): Ports => ({
  gitPort: portOption('--git-port', options.gitPort),
  routerPort: portOption('--router-port', options.routerPort),
});

async function login(ctx: Context, url: string, username: string, password: string, ports: Ports): Promise<void> {
  const { token } = (await ctx.api(url).request('POST', '/v1/auth/login/', { body: { username, password }, anonymous: true })).body as { token: string };
  updateProfile(ctx.session, (profile) => ({
    ...profile,
    url,
    username,
    token,
    gitPort: ports.gitPort ?? profile.gitPort ?? DEFAULT_GIT_PORT,
    routerPort: ports.routerPort ?? profile.routerPort ?? DEFAULT_ROUTER_PORT,
  }));
}

const GIT_PORT_HELP = `port of the platform's git server (default ${DEFAULT_GIT_PORT})`;
const ROUTER_PORT_HELP = `port of the platform's router, for app URLs (the controller's ROUTER_PORT; default ${DEFAULT_ROUTER_PORT})`;

/** register, login, logout, whoami, profiles. */
export function registerAuth(r: Registrar): void {
  r.command(
    'login [url]',
    'log in to a controller; the token is kept in the client file (mode 0600) under the profile',
    async (ctx, [given], options) => {
      const url = controllerUrl(ctx, given);
      const username = await ask(ctx, options.username, 'username: ', 'the username (--username)');
      const password = await ask(ctx, options.password ?? ctx.env.SVC_PASSWORD, 'password: ', 'the password (--password or SVC_PASSWORD)', true);
      await login(ctx, url, username, password, portsOf(options));
      if (ctx.json) printJson(ctx.io, { username, url, profile: ctx.session.name });
      else print(ctx.io, `Logged in as ${username} at ${url} (profile ${ctx.session.name})`);
    },
    (c) =>
      c
        .option('-u, --username <username>', 'the username')
        .option('-p, --password <password>', 'the password (or SVC_PASSWORD; asked for on a terminal)')
        .option('--git-port <port>', GIT_PORT_HELP)
        .option('--router-port <port>', ROUTER_PORT_HELP),
  );

  r.command(
    'register [url]',
    'create an account on a controller, then log in to it',
    async (ctx, [given], options) => {
      const url = controllerUrl(ctx, given);
      const username = await ask(ctx, options.username, 'username: ', 'the username (--username)');
      const email = await ask(ctx, options.email, 'email: ', 'the email address (--email)');
      const password = await ask(ctx, options.password ?? ctx.env.SVC_PASSWORD, 'password: ', 'the password (--password or SVC_PASSWORD)', true);
      const body: Record<string, string> = { username, password, email };
      if (typeof options.firstName === 'string') body.first_name = options.firstName;
      if (typeof options.lastName === 'string') body.last_name = options.lastName;
      // An administrator who is logged in may register others where registration is admin-only;
      // a token the controller no longer knows must not stand in the way of a new account.
      let user: unknown;
      try {
        user = (await ctx.api(url).request('POST', '/v1/auth/register/', { body })).body;
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 401) throw error;
        user = (await ctx.api(url).request('POST', '/v1/auth/register/', { body, anonymous: true })).body;
      }
      if (options.login !== false) await login(ctx, url, username, password, portsOf(options));
      if (ctx.json) printJson(ctx.io, user);
      else {
        print(ctx.io, `Registered ${username} at ${url}`);
        if (options.login !== false) print(ctx.io, `Logged in as ${username} (profile ${ctx.session.name})`);
      }
    },
    (c) =>
      c
        .option('-u, --username <username>', 'the username')
        .option('-p, --password <password>', 'the password (or SVC_PASSWORD; asked for on a terminal)')
        .option('-e, --email <email>', 'the email address')
        .option('--first-name <name>', 'first name')
        .option('--last-name <name>', 'last name')
        .option('--no-login', 'do not log in as the new user afterwards')
        .option('--git-port <port>', GIT_PORT_HELP)
        .option('--router-port <port>', ROUTER_PORT_HELP),
  );

  r.command('logout', 'forget the token of the profile', async (ctx) => {
    updateProfile(ctx.session, ({ token: _token, ...rest }) => rest);
    print(ctx.io, `Logged out (profile ${ctx.session.name})`);
  });

  r.command('whoami', 'show who the profile is logged in as, after checking the token with the controller', async (ctx) => {
    await ctx.authed().get('/v1/');
    const { username, url, name } = ctx.session;
    if (ctx.json) printJson(ctx.io, { username: username ?? null, url, profile: name });
    else print(ctx.io, `${username ?? '(a token from SVC_TOKEN)'} at ${url} (profile ${name})`);
  });

  r.command(
    'profiles',
    'list the profiles of the client file',
    async (ctx) => {
      const file = readClientFile(ctx.session.path);
      const rows = Object.entries(file.profiles).map(([name, p]) => [name === file.current ? `* ${name}` : `  ${name}`, p.url, p.username, p.token ? 'yes' : 'no']);
      if (ctx.json) printJson(ctx.io, { current: file.current, profiles: Object.fromEntries(Object.entries(file.profiles).map(([n, p]) => [n, { url: p.url, username: p.username }])) });
      else printTable(ctx.io, ['profile', 'url', 'username', 'logged in'], rows, 'no profiles: run `svc login`');
    },
    (c) => c.alias('profiles:list'),
  );

  r.command('profiles:use <name>', 'make a profile the default one', async (ctx, [name]) => {
    const file = readClientFile(ctx.session.path);
    if (name === undefined || file.profiles[name] === undefined) throw new UsageError(`no profile named ${name}`);
    writeClientFile(ctx.session.path, { ...file, current: name });
    print(ctx.io, `Using profile ${name}`);
  });
}
