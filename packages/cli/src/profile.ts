import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './errors';

/** One controller and the account used on it. */
export interface Profile {
  /** The controller's base URL, e.g. `http://127.0.0.1:8000`. */
  url?: string;
  username?: string;
  token?: string;
  /** Port of the platform's git server (for the remote `apps:create` adds); default 2222. */
  gitPort?: number;
  /** Port of the platform's router (app URLs are `http://<app url>:<port>`); default 8080. */
  routerPort?: number;
}

/** The client's file: named profiles and which one is used by default. */
export interface ClientFile {
  current: string;
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = 'default';
export const DEFAULT_GIT_PORT = 2222;
/** The controller's default ROUTER_PORT. */
export const DEFAULT_ROUTER_PORT = 8080;

/**
 * Where the client keeps its file: `$SVC_CONFIG` when set, else
 * `$XDG_CONFIG_HOME/svc/client.json` when XDG_CONFIG_HOME is set, else `~/.svc/client.json`.
 */
export function clientFilePath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_CONFIG) return env.SVC_CONFIG;
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'svc', 'client.json');
  return join(env.HOME ?? homedir(), '.svc', 'client.json');
}

/** Reads the client file; a missing file is an empty one. */
export function readClientFile(path: string): ClientFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { current: DEFAULT_PROFILE, profiles: {} };
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ClientFile>;
    return {
      current: typeof parsed.current === 'string' ? parsed.current : DEFAULT_PROFILE,
      profiles: parsed.profiles !== null && typeof parsed.profiles === 'object' ? parsed.profiles : {},
    };
  } catch {
    throw new CliError(`${path} is not valid JSON: fix or remove it`, EXIT.usage);
  }
}

/**
 * Writes the client file readable by its owner only (mode 0600, directory 0700): it holds
 * tokens. The file is replaced whole, so a crash never leaves half of it.
 */
export function writeClientFile(path: string, file: ClientFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

/** The profile in use and its settings, with the environment's overrides applied. */
export interface Session {
  name: string;
  /** Whether the profile was named by `--profile` or SVC_PROFILE rather than taken as the current one. */
  explicit: boolean;
  url: string | undefined;
  username: string | undefined;
  token: string | undefined;
  gitPort: number;
  routerPort: number;
  path: string;
}

/** A port from the environment variable `name` when set, else `fallback`. */
function portOf(name: string, value: string | undefined, fallback: number): number {
  if (!value) return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new CliError(`${name} is not a port: ${value}`, EXIT.usage);
  return port;
}

/**
 * Resolves the profile to use: `--profile`, else `SVC_PROFILE`, else the file's current one.
 * `SVC_URL`, `SVC_TOKEN`, `SVC_GIT_PORT` and `SVC_ROUTER_PORT` override the profile (for scripts and CI).
 */
export function resolveSession(profileOption: string | undefined, env: NodeJS.ProcessEnv = process.env): Session {
  const path = clientFilePath(env);
  const file = readClientFile(path);
  const name = profileOption ?? env.SVC_PROFILE ?? file.current;
  const profile = file.profiles[name] ?? {};
  const gitPort = portOf('SVC_GIT_PORT', env.SVC_GIT_PORT, profile.gitPort ?? DEFAULT_GIT_PORT);
  const routerPort = portOf('SVC_ROUTER_PORT', env.SVC_ROUTER_PORT, profile.routerPort ?? DEFAULT_ROUTER_PORT);
  return {
    name,
    explicit: profileOption !== undefined || env.SVC_PROFILE !== undefined,
    url: env.SVC_URL ?? profile.url,
    username: env.SVC_TOKEN ? undefined : profile.username,
    token: env.SVC_TOKEN ?? profile.token,
    gitPort,
    routerPort,
    path,
  };
}

/**
 * Changes one profile in the file. Logging in to a profile named with `--profile` leaves the
 * current profile as it is (`profiles:use` switches).
 */
export function updateProfile(session: Session, change: (profile: Profile) => Profile): void {
  const file = readClientFile(session.path);
  const next = change({ ...(file.profiles[session.name] ?? {}) });
  file.profiles[session.name] = next;
  if (!session.explicit) file.current = session.name;
  writeClientFile(session.path, file);
}
