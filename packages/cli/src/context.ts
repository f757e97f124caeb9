import { execFileSync } from 'node:child_process';
import type { Command } from 'commander';
import { ApiClient } from './api';
import { CliError, EXIT, UsageError } from './errors';
import type { Io } from './output';
import { resolveSession, type Session } from './profile';
import { VERSION } from './version';

/** The name of the git remote `apps:create` adds, and where the app of a checkout is read from. */
export const GIT_REMOTE = 'svc';

/** What every command works with: its output, the profile, the API, and the global flags. */
export class Context {
  private cachedSession: Session | undefined;

  constructor(
    readonly io: Io,
    private readonly command: Command,
    readonly env: NodeJS.ProcessEnv,
  ) {}

  private get globals(): { json?: boolean; profile?: string; app?: string } {
    return this.command.optsWithGlobals();
  }

  /** `--json`: print the API's JSON instead of tables. */
  get json(): boolean {
    return this.globals.json === true;
  }

  get session(): Session {
    this.cachedSession ??= resolveSession(this.globals.profile, this.env);
    return this.cachedSession;
  }

  /** A client for a controller URL given on the command line, or the profile's one. */
  api(url?: string): ApiClient {
    const base = url ?? this.session.url;
    if (base === undefined) throw new CliError('no controller configured: run `svc login <url>` (or set SVC_URL)', EXIT.auth);
    return new ApiClient(base, url === undefined || url === this.session.url ? this.session.token : undefined, `svc-cli/${VERSION}`);
  }

  /** A client that needs a token: refuses early, without a request, when there is none. */
  authed(): ApiClient {
    if (this.session.token === undefined) throw new CliError('not logged in: run `svc login` (or set SVC_TOKEN)', EXIT.auth);
    return this.api();
  }

  /** The app: `--app`, else the app of the `svc` git remote of the current checkout. */
  app(): string {
    const given = this.globals.app;
    if (given !== undefined && given !== '') return given;
    const fromRemote = appOfCheckout(process.cwd());
    if (fromRemote !== null) return fromRemote;
    throw new UsageError(`no app given: use --app <name>, or run inside a checkout with an \`${GIT_REMOTE}\` git remote`);
  }
}

/** The app named by the `svc` remote of the git checkout at `dir`, if any. */
export function appOfCheckout(dir: string): string | null {
  let url: string;
  try {
    url = execFileSync('git', ['remote', 'get-url', GIT_REMOTE], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
  const match = /\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  return match?.[1] ?? null;
}

/** The git URL of an app on the platform's git server. */
export function gitUrlOf(controllerUrl: string, gitPort: number, app: string): string {
  const host = new URL(controllerUrl).hostname;
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `ssh://git@${bracketed}:${gitPort}/${app}.git`;
}

/**
 * The URL an app answers on: the API's `url` field is the app's host name
 * (`<app>.<PLATFORM_DOMAIN>`), and the router listens on `routerPort` (the controller's
 * ROUTER_PORT, 8080 by default): `http://host:port`, without the port for 80, and
 * `https://host` for 443.
 */
export function appUrlOf(host: string, routerPort: number): string {
  if (routerPort === 80) return `http://${host}`;
  if (routerPort === 443) return `https://${host}`;
  return `http://${host}:${routerPort}`;
}
