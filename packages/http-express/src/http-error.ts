/**
 * A failure found by the HTTP edge itself (routing, body parsing, protocol), as opposed to
 * a business rule: it already knows its status, and the error middleware renders it.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
    this.name = 'HttpError';
  }
}

/** The answer for a path that names nothing at the request's API version. */
export function routeNotFound(): HttpError {
  return new HttpError(404, 'Not found.');
}

/** The answer for a known path asked with a method it does not support. */
export function methodNotAllowed(method: string, allowed: readonly string[]): HttpError {
  return new HttpError(405, `Method "${method}" not allowed.`, { Allow: allowed.join(', ') });
}
