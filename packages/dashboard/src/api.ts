import { errorDetail, LineBuffer } from './format.js';

/** An answer of the API that was not a success, with the detail the API gave. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

/** A paginated list as the API gives it. */
interface Page<T> {
  count: number;
  next: string | null;
  results: T[];
}

export interface App {
  id: string;
  owner: string;
  url: string;
  structure: Record<string, number>;
  created: string;
  updated: string;
}
export interface Release {
  version: number;
  summary: string;
  owner: string;
  created: string;
  build: string | null;
}
export interface Container {
  type: string;
  num: number;
  state: string;
  release: string;
}
export interface Config {
  values: Record<string, string>;
}
export interface Build {
  image: string;
  sha: string;
  owner: string;
  created: string;
  uuid: string;
}
export interface Domain {
  domain: string;
}
export interface Certificate {
  common_name: string;
  expires: string;
}
/** The scheme and public port at which the router answers for the apps. */
export interface AppsAddress {
  scheme: 'http' | 'https';
  port: number;
}
/** Where the apps and the git server are reached (`GET /v1/platform`, an extension). */
export interface Platform {
  platform_domain: string;
  /** Null when the controller does not know the router's address. */
  apps: AppsAddress | null;
  git: { host: string; port: number } | null;
}

/** Path segments are sent percent-encoded. */
const seg = encodeURIComponent;

/**
 * The public HTTP API of the controller, on the page's own origin, with the signed-in user's
 * token in the `Authorization` header (never a cookie). Every call here is in the OpenAPI
 * document the controller serves at `/v1/openapi.json`.
 */
export class Api {
  constructor(private readonly token: string | null) {}

  /** Logs in: the token of a new session. */
  static async login(username: string, password: string): Promise<string> {
    const body = await new Api(null).request<{ token: string }>('POST', '/v1/auth/login/', { username, password });
    return body.token;
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.token !== null) headers.Authorization = `token ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response | null = null;
    // A read is asked again once when the connection failed (browsers drop requests in flight
    // when the machine's network changes); a write never is, since it may have been done.
    for (let attempt = 1; res === null; attempt += 1) {
      try {
        res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
      } catch (error) {
        if (method !== 'GET' || attempt >= 2) throw new ApiError(0, `The controller could not be reached: ${error instanceof Error ? error.message : String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // A text answer (plain logs) stays text.
    }
    if (!res.ok) throw new ApiError(res.status, errorDetail(res.status, parsed));
    return parsed as T;
  }

  /** Every item of a paginated list, following `next` (same origin, relative path). */
  private async all<T>(path: string): Promise<T[]> {
    const items: T[] = [];
    let next: string | null = path;
    while (next !== null) {
      const page: Page<T> = await this.request<Page<T>>('GET', next);
      items.push(...page.results);
      next = page.next === null ? null : new URL(page.next, location.href).pathname + new URL(page.next, location.href).search;
    }
    return items;
  }

  /** The router's public scheme and port (an app's `url` is a host name only) and the git server. */
  platform(): Promise<Platform> {
    return this.request('GET', '/v1/platform/');
  }
  apps(): Promise<App[]> {
    return this.all<App>('/v1/apps/?page_size=1000');
  }
  app(id: string): Promise<App> {
    return this.request('GET', `/v1/apps/${seg(id)}/`);
  }
  createApp(id: string | null): Promise<App> {
    return this.request('POST', '/v1/apps/', id === null ? {} : { id });
  }
  deleteApp(id: string): Promise<void> {
    return this.request('DELETE', `/v1/apps/${seg(id)}/`);
  }
  releases(id: string): Promise<Release[]> {
    return this.all<Release>(`/v1/apps/${seg(id)}/releases/?page_size=1000`);
  }
  rollback(id: string, version: number): Promise<{ version: number }> {
    return this.request('POST', `/v1/apps/${seg(id)}/releases/rollback/`, { version });
  }
  containers(id: string): Promise<Container[]> {
    return this.all<Container>(`/v1/apps/${seg(id)}/containers/?page_size=1000`);
  }
  scale(id: string, type: string, count: number): Promise<void> {
    return this.request('POST', `/v1/apps/${seg(id)}/scale/`, { [type]: count });
  }
  restart(id: string, type: string | null): Promise<Container[]> {
    return this.request('POST', type === null ? `/v1/apps/${seg(id)}/containers/restart/` : `/v1/apps/${seg(id)}/containers/${seg(type)}/restart/`);
  }
  config(id: string): Promise<Config> {
    return this.request('GET', `/v1/apps/${seg(id)}/config/`);
  }
  /** Sets (a string) or unsets (null) config values: a new release. */
  setConfig(id: string, values: Record<string, string | null>): Promise<Config> {
    return this.request('POST', `/v1/apps/${seg(id)}/config/`, { values });
  }
  builds(id: string): Promise<Build[]> {
    return this.all<Build>(`/v1/apps/${seg(id)}/builds/?page_size=1000`);
  }
  deploy(id: string, image: string, procfile: Record<string, string>): Promise<Build> {
    return this.request('POST', `/v1/apps/${seg(id)}/builds/`, { image, procfile });
  }
  domains(id: string): Promise<Domain[]> {
    return this.all<Domain>(`/v1/apps/${seg(id)}/domains/?page_size=1000`);
  }
  addDomain(id: string, domain: string): Promise<Domain> {
    return this.request('POST', `/v1/apps/${seg(id)}/domains/`, { domain });
  }
  removeDomain(id: string, domain: string): Promise<void> {
    return this.request('DELETE', `/v1/apps/${seg(id)}/domains/${seg(domain)}`);
  }
  certificates(): Promise<Certificate[]> {
    return this.all<Certificate>('/v1/certs/?page_size=1000');
  }
  collaborators(id: string): Promise<string[]> {
    return this.request<{ users: string[] }>('GET', `/v1/apps/${seg(id)}/perms/`).then((body) => body.users);
  }
  addCollaborator(id: string, username: string): Promise<void> {
    return this.request('POST', `/v1/apps/${seg(id)}/perms/`, { username });
  }
  removeCollaborator(id: string, username: string): Promise<void> {
    return this.request('DELETE', `/v1/apps/${seg(id)}/perms/${seg(username)}`);
  }

  /**
   * Follows the app's log (`?follow=true`): the last lines, then each new line as it is
   * written, until `signal` aborts or the stream ends. A fetch stream rather than an
   * EventSource, which cannot send the `Authorization` header.
   */
  async followLogs(id: string, signal: AbortSignal, onLine: (line: string) => void): Promise<void> {
    const headers: Record<string, string> = { Accept: 'text/plain' };
    if (this.token !== null) headers.Authorization = `token ${this.token}`;
    const res = await fetch(`/v1/apps/${seg(id)}/logs/?follow=true&log_lines=200`, { headers, signal, credentials: 'omit', cache: 'no-store' });
    if (!res.ok || res.body === null) {
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Kept as text.
      }
      throw new ApiError(res.status, errorDetail(res.status, parsed));
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const lines = new LineBuffer();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const line of lines.push(value)) onLine(line);
    }
    for (const line of lines.flush()) onLine(line);
  }
}
