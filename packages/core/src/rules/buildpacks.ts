import { RequestRejected } from '../errors';
import type { Procfile } from '../model/entities';
import { PROCESS_TYPE_PATTERN } from './config';
import { addProcessType } from './sources';

/** The config variable that names an app's buildpack (Heroku's): an installed buildpack's name, or a git URL with an optional `#ref`. */
export const BUILDPACK_VARIABLE = 'BUILDPACK_URL';
/** The operator setting that lists the buildpack URLs apps may name. */
export const BUILDPACK_ALLOW_SETTING = 'BUILDPACK_URL_ALLOW';
/** The code of a `BUILDPACK_URL` the platform refuses (a URL the operator does not admit, or an unusable one). */
export const BUILDPACK_NOT_ALLOWED = 'BUILD.BUILDPACK_NOT_ALLOWED';
/** The code of a `BUILDPACK_URL` naming no installed buildpack. */
export const BUILDPACK_UNKNOWN = 'BUILD.BUILDPACK_UNKNOWN';
/** The code of a push no buildpack detects. */
export const BUILDPACK_NOT_DETECTED = 'BUILD.NO_BUILDPACK';
/** The code of a `bin/release` whose output cannot be used. */
export const BUILDPACK_RELEASE_INVALID = 'BUILD.RELEASE_INVALID';
/**
 * The file at a commit's top level that lists the buildpacks its build runs, one per line, in
 * order (Heroku's and Dokku's multi-buildpack `.buildpacks`): each line an installed
 * buildpack's name or an admitted git URL, as `BUILDPACK_URL` takes them; blank lines and
 * lines starting with `#` are skipped. `BUILDPACK_URL`, when set, comes first.
 */
export const BUILDPACKS_FILE = '.buildpacks';
/** The most buildpacks `.buildpacks` may list. */
export const BUILDPACKS_FILE_MAX = 8;

/** How an app's build picks its buildpack. */
export type BuildpackChoice =
  /** No `BUILDPACK_URL`: every installed buildpack is tried in order. */
  | { kind: 'auto' }
  /** An installed buildpack, by name. */
  | { kind: 'named'; name: string }
  /** A buildpack fetched from a git URL (normalised, see `normaliseBuildpackUrl`), at `ref` when given. */
  | { kind: 'url'; url: string; ref: string | null };

/** What an installed buildpack may be called: a directory name of letters, digits, dots, dashes and underscores. */
const BUILDPACK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** A branch, tag or commit: git's ref characters, no leading dash (it would read as an option). */
const BUILDPACK_REF = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$/;
const URL_MAX_LENGTH = 2048;
const SCHEMES = new Set(['https:', 'http:']);

function notAllowed(value: string, why: string, source: string): RequestRejected {
  // A password written into the URL is not repeated back.
  const shown = value.slice(0, 200).replace(/^([^/]*\/\/)[^/]*@/, '$1***@');
  return new RequestRejected(BUILDPACK_NOT_ALLOWED, `${source} ${JSON.stringify(shown)} cannot be used: ${why}`);
}

/**
 * Normalises a buildpack's git URL for comparison: lowercase scheme and host, no default
 * port, no trailing slash (unless `keepTrailingSlash`, which allow-list prefixes use).
 * @throws Error with the reason when the URL is unusable: not http(s), credentials, a
 *   query or fragment, `.` or `..` segments, percent-encoding, backslashes, spaces or control characters.
 */
export function normaliseBuildpackUrl(raw: string, keepTrailingSlash = false): string {
  if (raw.length > URL_MAX_LENGTH) throw new Error(`a URL is at most ${URL_MAX_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f\\]/.test(raw)) throw new Error('a URL cannot hold spaces, control characters or backslashes');
  if (raw.includes('%')) throw new Error('percent-encoded characters are not accepted');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(raw);
  if (scheme === null || !SCHEMES.has(`${(scheme[1] ?? '').toLowerCase()}:`)) {
    throw new Error('only https:// (or http://) git URLs are accepted');
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('it is not a URL');
  }
  if (url.username !== '' || url.password !== '' || /^[^/]*\/\/[^/]*@/.test(raw)) throw new Error('a URL cannot carry credentials');
  if (url.search !== '' || raw.includes('?')) throw new Error('a URL cannot have a query');
  if (url.hash !== '' || raw.includes('#')) throw new Error('a URL cannot have a fragment here');
  if (url.hostname === '') throw new Error('a URL needs a host');
  // The URL parser resolves dot segments: they are looked for in what was written.
  const path = raw.slice(scheme[0].length).replace(/^[^/]*/, '');
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) throw new Error('a URL cannot have "." or ".." segments');
  let pathname = url.pathname;
  if (!keepTrailingSlash) pathname = pathname.replace(/\/+$/, '');
  return `${url.protocol}//${url.host}${pathname}`;
}

/** Whether the operator's allow-list admits a normalised URL: an entry equal to it, or an entry ending in `/` that it starts with. */
export function isBuildpackUrlAllowed(url: string, allow: readonly string[]): boolean {
  return allow.some((entry) => {
    let normalised: string;
    try {
      normalised = normaliseBuildpackUrl(entry, entry.endsWith('/'));
    } catch {
      // An entry the server would not have started with admits nothing.
      return false;
    }
    return entry.endsWith('/') ? url.startsWith(normalised) && url.length > normalised.length : url === normalised;
  });
}

/**
 * Reads an app's `BUILDPACK_URL`: unset or blank is `auto`; a bare name is an installed
 * buildpack; anything else is a git URL with an optional `#ref`, admitted only when the
 * operator's allow-list (`BUILDPACK_URL_ALLOW`: exact URLs, or prefixes ending in `/`) admits it.
 * `source` names where the value comes from in messages (`BUILDPACK_URL`, or a line of `.buildpacks`).
 * @throws RequestRejected `BUILD.BUILDPACK_NOT_ALLOWED` for a URL that is unusable or not admitted.
 */
export function parseBuildpackChoice(value: string | undefined, allow: readonly string[], source: string = BUILDPACK_VARIABLE): BuildpackChoice {
  const trimmed = (value ?? '').trim();
  const undo = source === BUILDPACK_VARIABLE ? `unset ${BUILDPACK_VARIABLE}` : `take it out of ${BUILDPACKS_FILE}`;
  if (trimmed === '') return { kind: 'auto' };
  if (BUILDPACK_NAME.test(trimmed) && !trimmed.includes('..')) return { kind: 'named', name: trimmed };
  const hash = trimmed.indexOf('#');
  const raw = hash < 0 ? trimmed : trimmed.slice(0, hash);
  const ref = hash < 0 ? null : trimmed.slice(hash + 1);
  if (ref !== null && ref !== '' && (!BUILDPACK_REF.test(ref) || ref.includes('..') || ref.includes('//') || ref.endsWith('/') || ref.endsWith('.lock'))) {
    throw notAllowed(trimmed, 'the part after "#" must be a branch, tag or commit (letters, digits, ".", "_", "-", "/").', source);
  }
  let url: string;
  try {
    url = normaliseBuildpackUrl(raw);
  } catch (error) {
    throw notAllowed(trimmed, `${error instanceof Error ? error.message : String(error)}. Set it to an installed buildpack's name or an https:// git URL.`, source);
  }
  if (allow.length === 0) {
    throw notAllowed(trimmed, `this platform admits no buildpack URL (its operator lists none in ${BUILDPACK_ALLOW_SETTING}). Name an installed buildpack instead, or ${undo}.`, source);
  }
  if (!isBuildpackUrlAllowed(url, allow)) {
    throw notAllowed(trimmed, `${url} is not among the buildpack URLs the operator admits (${BUILDPACK_ALLOW_SETTING}: exact URLs, or prefixes ending in "/").`, source);
  }
  return { kind: 'url', url, ref: ref === '' ? null : ref };
}

/**
 * Reads a commit's `.buildpacks`: the buildpacks it lists, in order, each read as
 * `parseBuildpackChoice` reads `BUILDPACK_URL` (its messages naming the line).
 * @throws RequestRejected `BUILD.BUILDPACK_NOT_ALLOWED` for an entry that is unusable or not
 *   admitted, a file that lists none, or more than `BUILDPACKS_FILE_MAX`.
 */
export function parseBuildpacksFile(text: string, allow: readonly string[]): Array<Exclude<BuildpackChoice, { kind: 'auto' }>> {
  const entries = text
    .split(/\r?\n/)
    .map((line, index) => ({ line: index + 1, value: line.trim() }))
    .filter((entry) => entry.value !== '' && !entry.value.startsWith('#'));
  if (entries.length === 0) {
    throw new RequestRejected(BUILDPACK_NOT_ALLOWED, `${BUILDPACKS_FILE} lists no buildpack: list one per line (an installed buildpack's name or an admitted git URL), or remove the file.`);
  }
  if (entries.length > BUILDPACKS_FILE_MAX) {
    throw new RequestRejected(BUILDPACK_NOT_ALLOWED, `${BUILDPACKS_FILE} lists ${entries.length} buildpacks; a build runs at most ${BUILDPACKS_FILE_MAX}.`);
  }
  return entries.map(({ line, value }) => {
    const choice = parseBuildpackChoice(value, allow, `${BUILDPACKS_FILE} line ${line}:`);
    // A line is never blank here, so never `auto`.
    if (choice.kind === 'auto') throw new RequestRejected(BUILDPACK_NOT_ALLOWED, `${BUILDPACKS_FILE} line ${line} names no buildpack.`);
    return choice;
  });
}

/** How a push is told that a buildpack its `.buildpacks` lists does not take the app. */
export function listedBuildpackNotDetected(name: string): RequestRejected {
  return new RequestRejected(
    BUILDPACK_NOT_DETECTED,
    `${BUILDPACKS_FILE} lists ${name}, whose bin/detect does not take this app: add what it looks for, or take it out of ${BUILDPACKS_FILE}.`,
  );
}

/** The largest `bin/release` output read, in characters. */
export const RELEASE_OUTPUT_MAX_LENGTH = 64 * 1024;

const TOP_LEVEL = /^([A-Za-z0-9_-]+)[ \t]*:[ \t]*(.*)$/;
const ENTRY = /^[ \t]+([^:\s]+)[ \t]*:[ \t]*(.*)$/;

/** A YAML scalar as `bin/release` writes one: plain, single-quoted (`''` escapes a quote) or double-quoted (backslash escapes). */
function scalar(text: string): string | null {
  const value = text.trim();
  if (value.startsWith("'")) {
    if (value.length < 2 || !value.endsWith("'")) return null;
    const inner = value.slice(1, -1);
    // Inside single quotes a quote is written twice; a lone one would end the string early.
    return inner.replace(/''/g, '').includes("'") ? null : inner.replace(/''/g, "'");
  }
  if (value.startsWith('"')) {
    if (value.length < 2 || !value.endsWith('"')) return null;
    let out = '';
    const escapes: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', t: '\t' };
    const inner = value.slice(1, -1);
    for (let i = 0; i < inner.length; i++) {
      const c = inner[i] as string;
      if (c === '"') return null;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const next = inner[++i];
      if (next === undefined || !Object.hasOwn(escapes, next)) return null;
      out += escapes[next];
    }
    return out;
  }
  // Block scalars, flow collections, anchors and tags are YAML this reader does not take.
  if (/^[|>[{&*!%@`]/.test(value)) return null;
  // A plain scalar ends at a comment.
  return value.replace(/[ \t]+#.*$/, '');
}

/**
 * Reads what `bin/release` prints (the YAML subset of the buildpack contract): the
 * `default_process_types:` mapping of indented `<type>: <command>` lines becomes a Procfile;
 * `addons`, `config_vars` and other keys are ignored. No `default_process_types` is an empty Procfile.
 * @throws RequestRejected `BUILD.RELEASE_INVALID` with one reason per wrong line (types are
 *   checked as in a Procfile: [a-z0-9-_], no duplicates, a command each).
 */
export function parseBuildpackRelease(text: string): Procfile {
  if (text.length > RELEASE_OUTPUT_MAX_LENGTH) {
    throw new RequestRejected(BUILDPACK_RELEASE_INVALID, `bin/release printed more than ${RELEASE_OUTPUT_MAX_LENGTH} characters.`);
  }
  const procfile = Object.create(null) as Procfile;
  const problems: string[] = [];
  let inTypes = false;
  text.replace(/^\uFEFF/, '').split(/\r?\n/).forEach((line, index) => {
    const where = `bin/release line ${index + 1}`;
    if (line.trim() === '' || line.trim().startsWith('#') || line.trim() === '---' || line.trim() === '...') return;
    if (!/^[ \t]/.test(line)) {
      const top = TOP_LEVEL.exec(line);
      inTypes = top?.[1] === 'default_process_types';
      if (!inTypes) return;
      const rest = (top?.[2] ?? '').replace(/[ \t]+#.*$/, '').trim();
      if (rest !== '' && rest !== '{}' && rest !== '~' && rest !== 'null') {
        problems.push(`${where}: default_process_types must be followed by indented "<type>: <command>" lines.`);
      }
      return;
    }
    if (!inTypes) return;
    const match = ENTRY.exec(line);
    if (match === null) {
      problems.push(`${where}: expected "<process type>: <command>" under default_process_types.`);
      return;
    }
    const [, type = '', rawCommand = ''] = match;
    const command = scalar(rawCommand);
    if (command === null && PROCESS_TYPE_PATTERN.test(type)) problems.push(`${where}: the command of ${type} is not a valid YAML string.`);
    else addProcessType(procfile, type, command ?? '', where, problems);
  });
  if (problems.length > 0) {
    throw new RequestRejected(BUILDPACK_RELEASE_INVALID, `The buildpack's bin/release output cannot be used: ${problems.slice(0, 10).join(' ')}`);
  }
  return { ...procfile };
}

/**
 * The process types of a buildpack build: the buildpack's defaults (`bin/release`'s
 * `default_process_types`) overridden, type by type, by the app's own Procfile.
 */
export function mergeProcessTypes(defaults: Procfile, procfile: Procfile): Procfile {
  return { ...defaults, ...procfile };
}

/** How a push is told that no buildpack detected the app, naming what was tried and, for each, what it looks for when known. */
export function noBuildpackDetected(tried: ReadonlyArray<{ name: string; needs?: string | null }>): RequestRejected {
  const list = tried.map((b) => (b.needs ? `${b.name} needs ${b.needs}` : `${b.name} did not detect it`)).join(', ');
  return new RequestRejected(
    BUILDPACK_NOT_DETECTED,
    tried.length === 0
      ? 'No buildpack is installed on this platform, so the commit cannot be compiled: add a Procfile and a Dockerfile, or ask the operator.'
      : `No buildpack detected this app: ${list}. Add what one of them looks for, or set ${BUILDPACK_VARIABLE} to choose one.`,
  );
}
