import express, { type Request, type Response } from 'express';
import { HttpError } from './http-error';

/** The largest request body accepted, after decompression. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

// Reads any content type as bytes; choosing the parser here keeps 415 and JSON errors ours.
const readRaw = express.raw({ type: () => true, limit: BODY_LIMIT_BYTES });

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json$/;
const FORM_TYPE = 'application/x-www-form-urlencoded';
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

interface MediaType {
  type: string;
  charset: string | undefined;
}

function mediaTypeOf(header: string | undefined): MediaType {
  const [type = '', ...params] = (header ?? '').split(';');
  let charset: string | undefined;
  for (const param of params) {
    const [name, value] = param.split('=');
    if (name?.trim().toLowerCase() === 'charset' && value !== undefined) {
      charset = value.trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    }
  }
  return { type: type.trim().toLowerCase(), charset };
}

/** V8 quotes a piece of the input in its message; the client has the input, so keep only the reason. */
function shortReason(error: unknown): string {
  const message = error instanceof Error ? error.message : 'invalid JSON';
  const reason = message.replace(/, ".*" is not valid JSON$/s, '').replace(/\s+/g, ' ').trim();
  return reason.length > 120 ? `${reason.slice(0, 117)}...` : reason;
}

/** Form fields as an object; a repeated field becomes an array, which the core rejects as not a string. */
function parseForm(text: string): Record<string, string | string[]> {
  const fields = new Map<string, string | string[]>();
  for (const [name, value] of new URLSearchParams(text)) {
    const previous = fields.get(name);
    if (previous === undefined) fields.set(name, value);
    else fields.set(name, Array.isArray(previous) ? [...previous, value] : [previous, value]);
  }
  // fromEntries defines own properties, so a field named __proto__ stays a plain field.
  return Object.fromEntries(fields);
}

/**
 * True when a string or object key anywhere in the value holds U+0000. Databases refuse
 * it in text columns, so it must be stopped before it reaches a use case. Iterative,
 * because a 1 MiB body can nest deeper than the call stack.
 */
function containsNullCharacter(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      if (next.includes('\u0000')) return true;
    } else if (Array.isArray(next)) {
      // One by one: spreading half a million items into push() overflows the argument limit.
      for (const item of next) pending.push(item);
    } else if (typeof next === 'object' && next !== null) {
      for (const [key, item] of Object.entries(next)) {
        if (key.includes('\u0000')) return true;
        pending.push(item);
      }
    }
  }
  return false;
}

const NULL_CHARACTERS = 'Null characters are not allowed.';

function readBytes(req: Request, res: Response): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    readRaw(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) reject(error);
      else resolve(Buffer.isBuffer(req.body) ? (req.body as Buffer) : undefined);
    });
  });
}

/**
 * Reads the request body: JSON (any top-level value) or form-encoded; an empty body is `{}`.
 * @throws HttpError 400 for malformed JSON or a NUL character in any string, 415 for another content type or charset; the
 *   body reader's own 413/415/400 errors propagate for the error middleware.
 */
export async function readBody(req: Request, res: Response): Promise<unknown> {
  const bytes = await readBytes(req, res);
  if (bytes === undefined || bytes.length === 0) return {};
  const media = mediaTypeOf(req.headers['content-type']);
  const isJson = JSON_TYPE.test(media.type);
  if (!isJson && media.type !== FORM_TYPE) {
    throw new HttpError(415, `Unsupported media type "${media.type.slice(0, 100)}" in request.`);
  }
  if (media.charset !== undefined && !UTF8_CHARSETS.has(media.charset)) {
    throw new HttpError(415, `Unsupported charset "${media.charset.slice(0, 100)}" in request.`);
  }
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  if (text.trim() === '') return {};
  let body: unknown;
  if (!isJson) {
    body = parseForm(text);
  } else {
    try {
      body = JSON.parse(text) as unknown;
    } catch (error) {
      throw new HttpError(400, `JSON parse error - ${shortReason(error)}`);
    }
  }
  if (containsNullCharacter(body)) throw new HttpError(400, NULL_CHARACTERS);
  return body;
}
