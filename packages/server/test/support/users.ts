import type { ApiClient } from './client';
import type { UserJson } from './types';

/** A registered, logged-in user with a client that sends their token. */
export interface Session {
  username: string;
  password: string;
  email: string;
  token: string;
  /** The server's client with this user's token (at the server's default version). */
  api: ApiClient;
  user: UserJson;
}

/**
 * Registers a user (201 expected) and returns the User JSON. The first user registered on a
 * server becomes its administrator.
 */
export async function register(api: ApiClient, username: string, password = `${username}-Secret1`, extra: Record<string, string> = {}): Promise<UserJson> {
  const res = await api.post<UserJson>('/v1/auth/register/', { username, password, email: `${username}@example.com`, ...extra }, { token: null });
  if (res.status !== 201) throw new Error(`register ${username}: ${res.status} ${res.text}`);
  return res.body;
}

/** Logs in (200 expected) and returns the token. */
export async function login(api: ApiClient, username: string, password: string): Promise<string> {
  const res = await api.post<{ token: string }>('/v1/auth/login/', { username, password }, { token: null });
  if (res.status !== 200) throw new Error(`login ${username}: ${res.status} ${res.text}`);
  expect(res.body.token).toMatch(/^[0-9a-f]{40}$/);
  return res.body.token;
}

/** Registers and logs in a user. */
export async function signUp(api: ApiClient, username: string, password = `${username}-Secret1`): Promise<Session> {
  const user = await register(api, username, password);
  const token = await login(api, username, password);
  return { username, password, email: user.email, token, api: api.as(token), user };
}

let counter = 0;
/** A name no other call in this test process returns, e.g. `app-7`. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}
