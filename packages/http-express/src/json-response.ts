import type { Application, Response } from 'express';

type JsonMethod = (this: Response, body: unknown) => Response;

/**
 * Gives the application's responses a `json` that writes the common answer directly:
 * `Content-Type: application/json; charset=utf-8`, `Content-Length`, the body (none for
 * HEAD). That is what Express's own `res.json` sends for it, through a chain of content-type
 * parsing and formatting, settings lookups and freshness checks that cost about as much
 * as the rest of the edge's work on a cached read. Every case where Express would do more
 * (a Content-Type set already, a status without a body, a conditional request, JSON
 * settings) goes to Express's `res.json` as before.
 */
export function installJsonResponse(app: Application): void {
  // The prototype of the application's responses; Express's types do not declare it.
  const responses = (app as unknown as { response: { json: JsonMethod } }).response;
  const general = responses.json;
  responses.json = function json(this: Response, body: unknown): Response {
    const { req } = this;
    const text = JSON.stringify(body) as string | undefined;
    if (
      text === undefined ||
      this.statusCode === 204 ||
      this.statusCode === 205 ||
      this.statusCode === 304 ||
      this.getHeader('Content-Type') !== undefined ||
      req.headers['if-none-match'] !== undefined ||
      req.headers['if-modified-since'] !== undefined ||
      app.get('json replacer') !== undefined ||
      app.get('json spaces') !== undefined ||
      app.get('json escape') === true
    ) {
      return general.call(this, body);
    }
    this.setHeader('Content-Type', 'application/json; charset=utf-8');
    this.setHeader('Content-Length', Buffer.byteLength(text, 'utf8'));
    if (req.method === 'HEAD') this.end();
    else this.end(text, 'utf8');
    return this;
  };
}
