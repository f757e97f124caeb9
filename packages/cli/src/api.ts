import { ApiError, CliError, EXIT, reasonOf } from './errors';

/** The API version this client speaks; every request asks for it. */
export const CLIENT_API_VERSION = '1.7';

/** A page of a list, as the controller sends it. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** What the client sends besides method and path. */
export interface RequestOptions {
  body?: unknown;
  /** Query parameters, e.g. `{ log_lines: '50' }`. */
  query?: Record<string, string>;
  /** Send no Authorization header even when a token is known (register, login). */
  anonymous?: boolean;
  /** Extra request headers (e.g. `Last-Event-ID`). */
  headers?: Record<string, string>;
}

/** A response body as text and, when it is JSON, parsed. */
export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

/** The controller's REST API over fetch, with one base URL and (after login) one token. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
    private readonly userAgent: string,
  ) {}

  private url(path: string, query?: Record<string, string>): string {
    const url = new URL(path.startsWith('http') ? path : `${this.baseUrl.replace(/\/+$/, '')}${path}`);
    for (const [key, value] of Object.entries(query ?? {})) url.searchParams.set(key, value);
    return url.toString();
  }

  private headers(options: RequestOptions): Record<string, string> {
    const headers: Record<string, string> = {
      Accept: 'application/json, text/plain',
      SVC_API_VERSION: CLIENT_API_VERSION,
      'User-Agent': this.userAgent,
    };
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    if (!options.anonymous && this.token !== undefined) headers.Authorization = `token ${this.token}`;
    return { ...headers, ...(options.headers ?? {}) };
  }

  /** Sends a request and answers the raw response (any status); only transport failures throw. */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    try {
      return await fetch(this.url(path, options.query), {
        method,
        headers: this.headers(options),
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        redirect: 'manual',
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach the controller at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, EXIT.unreachable);
    }
  }

  /**
   * Sends a request and answers the parsed body of a success.
   * @throws ApiError with the server's reason for any status of 300 or more.
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const response = await this.send(method, path, options);
    const text = await response.text();
    let body: unknown = text;
    if (/\bjson\b/i.test(response.headers.get('content-type') ?? '') && text !== '') {
      try {
        body = JSON.parse(text) as unknown;
      } catch {
        body = text;
      }
    }
    if (response.status >= 300) {
      let reason = reasonOf(response.status, body, text);
      if (response.status === 401) reason = `${reason} (log in with \`svc login\`)`;
      throw new ApiError(response.status, reason, body);
    }
    return { status: response.status, headers: response.headers, body, text };
  }

  async get<T>(path: string, query?: Record<string, string>): Promise<T> {
    return (await this.request('GET', path, { query })).body as T;
  }

  async post<T>(path: string, body: unknown = {}): Promise<T> {
    return (await this.request('POST', path, { body })).body as T;
  }

  async delete(path: string, body?: unknown): Promise<void> {
    await this.request('DELETE', path, { body });
  }

  /** Every item of a paginated list, following `next` (1000 a page). */
  async all<T>(path: string): Promise<T[]> {
    const items: T[] = [];
    let next: string | null = this.url(path, { page_size: '1000' });
    while (next !== null) {
      const page: Page<T> = await this.get<Page<T>>(next);
      items.push(...page.results);
      next = page.next;
    }
    return items;
  }
}

/** A path segment, escaped. */
export const seg = (value: string): string => encodeURIComponent(value);
