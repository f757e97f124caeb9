/*
 * Pure helpers of the dashboard: no DOM, no network, so that they are unit-tested in Node.
 */

/** Words that make a config key look like it holds a secret. */
const SECRET_WORDS = ['SECRET', 'PASSWORD', 'PASSWD', 'TOKEN', 'KEY', 'PRIVATE', 'CREDENTIAL', 'AUTH', 'SALT', 'DSN', 'CERT'];

/**
 * Whether a config value should be masked until the user reveals it: its key names a secret
 * (`DATABASE_PASSWORD`, `API_KEY`, `SESSION_SECRET`…), or the value is a URL with a password
 * in it (`postgres://user:pw@host/db`).
 */
export function looksSecret(key: string, value: string): boolean {
  const words = key.toUpperCase().split(/[^A-Z0-9]+/).filter((word) => word !== '');
  if (words.some((word) => SECRET_WORDS.some((secret) => word === secret || word.endsWith(secret) || word.startsWith(secret)))) return true;
  return /^[a-z][a-z0-9+.-]*:\/\/[^/@:\s]*:[^/@\s]+@/i.test(value);
}

/** What a masked value shows: as many dots as characters, at most 12, so its length is not told exactly. */
export function maskValue(value: string): string {
  return value === '' ? '' : '•'.repeat(Math.min(Math.max(value.length, 6), 12));
}

/** An app's structure as text: `web 2 · worker 1`, or `none` before the first scale. */
export function processCounts(structure: Readonly<Record<string, number>>): string {
  const entries = Object.entries(structure).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? 'none' : entries.map(([type, count]) => `${type} ${count}`).join(' · ');
}

/** The error messages of a field, as the API gives them: a list of strings, or one string. */
function messagesOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)));
  return [JSON.stringify(value)];
}

/**
 * The text shown for an API error: its `detail`, its `non_field_errors`, each field's
 * messages as `field: message`, the bare string of an API 1.0 answer, or the status when the
 * answer says nothing readable.
 */
export function errorDetail(status: number, body: unknown): string {
  if (typeof body === 'string' && body.trim() !== '') return body.trim();
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const record = body as Record<string, unknown>;
    if (typeof record.detail === 'string') return record.detail;
    const parts: string[] = [];
    for (const [field, value] of Object.entries(record)) {
      const messages = messagesOf(value);
      parts.push(...(field === 'non_field_errors' ? messages : messages.map((message) => `${field}: ${message}`)));
    }
    if (parts.length > 0) return parts.join(' ');
  }
  return `The controller answered ${status} without saying why.`;
}

/**
 * Reads a Procfile written as text, one `type: command` a line (blank lines and `#` comments
 * skipped), into the object the builds endpoint takes.
 * @throws Error naming the line that is not `type: command`.
 */
export function parseProcfile(text: string): Record<string, string> {
  const procfile: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const match = /^([A-Za-z0-9_-]+)\s*:\s*(.+)$/.exec(line);
    if (match === null) throw new Error(`Procfile line ${index + 1} is not "type: command".`);
    procfile[match[1] as string] = (match[2] as string).trim();
  });
  return procfile;
}

/**
 * Splits a text stream into lines: `push` takes each decoded chunk and returns the lines it
 * completed; a line cut between two chunks comes out whole once its newline arrives.
 */
export class LineBuffer {
  private rest = '';

  push(chunk: string): string[] {
    const text = this.rest + chunk;
    const lines = text.split('\n');
    this.rest = lines.pop() ?? '';
    return lines;
  }

  /** What is left without a newline (the stream ended in the middle of a line). */
  flush(): string[] {
    const rest = this.rest;
    this.rest = '';
    return rest === '' ? [] : [rest];
  }
}

/** Whether a scrolled box is at (or within `slack` pixels of) its bottom: new lines then follow. */
export function atBottom(scrollTop: number, clientHeight: number, scrollHeight: number, slack = 8): boolean {
  return scrollTop + clientHeight >= scrollHeight - slack;
}

/** The first 7 characters of a commit sha, or `–` when a build has none. */
export function shortSha(sha: string): string {
  return sha === '' ? '–' : sha.slice(0, 7);
}

/** The hash route of the page: the apps list, or one app. */
export type Route = { page: 'apps' } | { page: 'app'; app: string };

/** Reads `#/apps` and `#/apps/<id>`; anything else is the apps list. */
export function parseRoute(hash: string): Route {
  const match = /^#\/apps\/([a-z0-9]+(?:-[a-z0-9]+)*)\/?$/.exec(hash);
  return match === null ? { page: 'apps' } : { page: 'app', app: match[1] as string };
}

/** Whether a certificate's common name covers a host: the same name, or a wildcard one level above it. */
export function certificateCovers(commonName: string, host: string): boolean {
  const name = commonName.toLowerCase();
  const target = host.toLowerCase();
  if (name === target) return true;
  if (!name.startsWith('*.')) return false;
  const suffix = name.slice(1);
  return target.endsWith(suffix) && target.length > suffix.length && !target.slice(0, -suffix.length).includes('.');
}

/**
 * An app's address: its `url` (a host name, `shop.localhost`) with the router's public scheme
 * and port, `http://shop.localhost:8080/`; no port when it is the scheme's default.
 */
export function appLink(host: string, router: { scheme: 'http' | 'https'; port: number }): string {
  const standard = (router.scheme === 'http' && router.port === 80) || (router.scheme === 'https' && router.port === 443);
  return `${router.scheme}://${host}${standard ? '' : `:${router.port}`}/`;
}

/**
 * Whether a release may be rolled back to: it has a build, or the current release has none
 * either. Rolling an app that runs a build back to a release without one would leave it
 * nothing to run; the API refuses it (409), so no button offers it.
 */
export function canRollBackTo(target: { build: string | null }, current: { build: string | null }): boolean {
  return target.build !== null || current.build === null;
}
