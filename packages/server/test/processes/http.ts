/** A response of the controller: status, release header and the parsed JSON body. */
export interface Reply {
  status: number;
  /** The `Svc-Release` header (the new release's version number), when the response has one. */
  release: string | null;
  body: unknown;
}

/** One API call with a token and a JSON body; network failures reject. */
export async function call(baseUrl: string, method: string, path: string, token: string | null, json?: unknown): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.Authorization = `token ${token}`;
  if (json !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body: json === undefined ? undefined : JSON.stringify(json),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let body: unknown = text;
  if (text !== '' && (response.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text) as unknown;
  return { status: response.status, release: response.headers.get('svc-release'), body };
}

/** Calls until `accept` says yes or `timeoutMs` passes; resolves with the last reply or error. */
export async function callUntil<T = Reply>(
  attempt: () => Promise<T>,
  accept: (reply: T) => boolean,
  timeoutMs: number,
): Promise<T | Error> {
  const deadline = Date.now() + timeoutMs;
  let last: T | Error = new Error('not called');
  while (Date.now() < deadline) {
    try {
      last = await attempt();
      if (accept(last)) return last;
    } catch (error) {
      last = error instanceof Error ? error : new Error(String(error));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return last;
}

/** Registers `username` (the first user becomes administrator) and logs in; resolves with the token. */
export async function registerAndLogin(baseUrl: string, username: string, password = 'correct horse battery staple'): Promise<string> {
  const registered = await call(baseUrl, 'POST', '/v1/auth/register', null, { username, password, email: `${username}@example.com` });
  if (registered.status !== 201) throw new Error(`register ${username}: ${registered.status} ${JSON.stringify(registered.body)}`);
  const login = await call(baseUrl, 'POST', '/v1/auth/login', null, { username, password });
  const token = (login.body as { token?: unknown }).token;
  if (login.status !== 200 || typeof token !== 'string') throw new Error(`login ${username}: ${login.status} ${JSON.stringify(login.body)}`);
  return token;
}
