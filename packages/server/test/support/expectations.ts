import type { HttpResponse } from './client';
import type { PageJson } from './types';

/** The response has the status and a `{detail}` body (with that exact text when given). */
export function expectDetail(res: HttpResponse<unknown>, status: number, detail?: string | RegExp): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { detail: detail === undefined ? expect.any(String) : typeof detail === 'string' ? detail : expect.stringMatching(detail) },
  });
}

/** A 400 whose body maps exactly these fields to non-empty lists of messages. */
export function expectFieldErrors(res: HttpResponse<unknown>, fields: string[]): void {
  expect(res.status).toBe(400);
  const body = res.body as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual([...fields].sort());
  for (const field of fields) {
    expect(body[field]).toEqual(expect.arrayContaining([expect.any(String)]));
    expect(Array.isArray(body[field]) && (body[field] as unknown[]).every((m) => typeof m === 'string')).toBe(true);
  }
}

/** A 400 saying the one field must be unique. */
export function expectUnique(res: HttpResponse<unknown>, field: string): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { [field]: ['This field must be unique.'] } });
}

/** 401 with the token challenge. */
export function expectUnauthenticated(res: HttpResponse<unknown>): void {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toBe('Token');
  expect(res.body).toEqual({ detail: expect.any(String) });
}

/** The 404 of anything that does not exist (or is hidden from the caller). */
export function expectNotFound(res: HttpResponse<unknown>): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { detail: 'Not found.' } });
}

/** 204 with an empty body. */
export function expectNoContent(res: HttpResponse<unknown>): void {
  expect({ status: res.status, text: res.text }).toEqual({ status: 204, text: '' });
}

/** A paginated envelope with exactly the four fields; returns it typed. */
export function expectPage<T>(res: HttpResponse<unknown>): PageJson<T> {
  expect(res.status).toBe(200);
  const body = res.body as PageJson<T>;
  expect(Object.keys(body).sort()).toEqual(['count', 'next', 'previous', 'results']);
  expect(Number.isInteger(body.count)).toBe(true);
  expect(Array.isArray(body.results)).toBe(true);
  return body;
}

/** Names of the API-version and platform-version headers, per SPEC §1. */
const X_HEADERS = ['x_svc_api_version', 'x_svc_platform_version'];
const NEW_HEADERS = ['svc_api_version', 'svc_platform_version', 'deis_api_version', 'deis_platform_version'];

/** The response carries exactly the version headers that `version` calls for. */
export function expectVersionHeaders(res: HttpResponse<unknown>, version: string): void {
  const minor = Number(version.split('.')[1]);
  const present = (name: string) => res.headers.get(name);
  if (minor === 0) {
    for (const name of [...X_HEADERS, ...NEW_HEADERS]) expect([name, present(name)]).toEqual([name, null]);
    return;
  }
  expect(present('x_svc_api_version')).toBe(version);
  expect(present('x_svc_platform_version')).toMatch(/^\d+\.\d+\.\d+/);
  if (minor < 4) {
    for (const name of NEW_HEADERS) expect([name, present(name)]).toEqual([name, null]);
  } else {
    expect(present('svc_api_version')).toBe(version);
    expect(present('svc_platform_version')).toBe(present('x_svc_platform_version'));
    // The names the Deis v1 client reads, so that it prints no version warning.
    expect(present('deis_api_version')).toBe(version);
    expect(present('deis_platform_version')).toBe(present('x_svc_platform_version'));
  }
}

/** The release headers of a config/build/rollback response for `version`, carrying `release`. */
export function expectReleaseHeaders(res: HttpResponse<unknown>, version: string, release: number): void {
  const minor = Number(version.split('.')[1]);
  expect(res.headers.get('x-svc-release')).toBe(String(release));
  expect(res.headers.get('svc-release')).toBe(minor >= 4 ? String(release) : null);
}
