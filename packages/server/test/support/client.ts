import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

/** A response as the tests look at it: status, headers, and the body parsed when it is JSON. */
export interface HttpResponse<T = JsonObject> {
  status: number;
  headers: Headers;
  /** Parsed JSON when the response says it is JSON (and is not empty), else the text. */
  body: T;
  /** The body exactly as received. */
  text: string;
  /** The `Content-Type` header, or an empty string. */
  contentType: string;
}

/** A JSON object with values the test still has to narrow. */
export type JsonObject = { [key: string]: unknown };

/** What one request may carry besides method and path. */
export interface RequestOptions {
  /** `Authorization: token <t>`; null sends no Authorization header even when the client has a token. */
  token?: string | null;
  /** Sent as `SVC_API_VERSION` unless `versionHeader` names another request header. */
  version?: string | null;
  versionHeader?: string;
  /** A JSON body (serialised here, with `Content-Type: application/json`). */
  json?: unknown;
  /** A body sent as is, with `contentType` (default none). */
  raw?: string | Buffer;
  contentType?: string;
  /** Form fields, sent as `application/x-www-form-urlencoded`. */
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

async function parsed(response: Response): Promise<HttpResponse<unknown>> {
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  let body: unknown = text;
  if (/\bjson\b/i.test(contentType) && text !== '') {
    try {
      body = JSON.parse(text) as unknown;
    } catch {
      body = text;
    }
  }
  return { status: response.status, headers: response.headers, body, text, contentType };
}

/**
 * A small typed client of the controller API over `fetch`. Each client remembers a token and
 * an API version; `as` and `at` derive clients for another user or another version.
 */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null = null,
    readonly version: string | null = null,
  ) {}

  /** The same server, another caller. */
  as(token: string | null): ApiClient {
    return new ApiClient(this.baseUrl, token, this.version);
  }

  /** The same caller, another API version (null: the server's default). */
  at(version: string | null): ApiClient {
    return new ApiClient(this.baseUrl, this.token, version);
  }

  /** The absolute URL of a path. */
  url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  async request<T = JsonObject>(method: Method, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
    const headers: Record<string, string> = {};
    const token = options.token === undefined ? this.token : options.token;
    if (token !== null) headers.Authorization = `token ${token}`;
    const version = options.version === undefined ? this.version : options.version;
    if (version !== null) headers[options.versionHeader ?? 'SVC_API_VERSION'] = version;
    let body: string | Buffer | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['Content-Type'] = 'application/json';
    } else if (options.form !== undefined) {
      body = new URLSearchParams(options.form).toString();
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    } else if (options.raw !== undefined) {
      body = options.raw;
      if (options.contentType !== undefined) headers['Content-Type'] = options.contentType;
    }
    Object.assign(headers, options.headers ?? {});
    const response = await fetch(this.url(path), { method, headers, body, redirect: 'manual' });
    return (await parsed(response)) as HttpResponse<T>;
  }

  get<T = JsonObject>(path: string, options?: RequestOptions): Promise<HttpResponse<T>> {
    return this.request<T>('GET', path, options);
  }

  /** POST with a JSON body (none when `json` is undefined and no other body option is given). */
  post<T = JsonObject>(path: string, json?: unknown, options: RequestOptions = {}): Promise<HttpResponse<T>> {
    return this.request<T>('POST', path, json === undefined ? options : { ...options, json });
  }

  delete<T = JsonObject>(path: string, options?: RequestOptions): Promise<HttpResponse<T>> {
    return this.request<T>('DELETE', path, options);
  }
}

/** A response read with node:http, for requests fetch will not send. */
export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** A request written byte for byte: repeated headers, odd framing, bodies sent in parts. */
export interface RawRequest {
  method: string;
  /** Sent as is (it must start with `/`). */
  path: string;
  /** Each pair becomes one header line, so a name may repeat. */
  headers?: Array<[string, string]>;
  /** Body chunks, written in order; `between` runs after the first chunk is written. */
  chunks?: Array<string | Buffer>;
  between?: () => Promise<void>;
}

/** Sends a request with node:http directly and reads the whole answer. */
export function rawRequest(baseUrl: string, spec: RawRequest): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise<RawResponse>((resolve, reject) => {
    // The path goes out exactly as given: no normalisation of `..`, `.` or percent-encoding.
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: spec.method, path: spec.path, agent: false },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const grouped = new Map<string, string[]>();
    for (const [name, value] of spec.headers ?? []) grouped.set(name, [...(grouped.get(name) ?? []), value]);
    for (const [name, values] of grouped) req.setHeader(name, values.length === 1 ? (values[0] as string) : values);
    const chunks = spec.chunks ?? [];
    const connected = new Promise<void>((done) => {
      req.once('socket', (socket) => {
        if (socket.connecting) socket.once('connect', () => done());
        else done();
      });
    });
    const write = async (): Promise<void> => {
      const [first, ...rest] = chunks;
      req.flushHeaders();
      if (first !== undefined) req.write(first);
      if (spec.between !== undefined) {
        await connected;
        await spec.between();
      }
      for (const chunk of rest) req.write(chunk);
      req.end();
    };
    write().catch(reject);
  });
}
