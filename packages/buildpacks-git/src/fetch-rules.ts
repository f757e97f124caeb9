import { createHash } from 'node:crypto';

/** The code of a buildpack that cannot be fetched from its git URL, or is no buildpack. */
export const BUILDPACK_FETCH = 'BUILD.BUILDPACK_FETCH';

/** The URL schemes fetched: git's own transports without a shell (no `ext::`, no ssh) and local paths. */
export const FETCH_PROTOCOLS = ['https', 'http', 'git', 'file'] as const;

/**
 * Whether `ref` can be asked of a remote: a branch, tag or commit name made of letters,
 * digits, `.`, `_`, `-` and `/`, not starting with `-` or `/`, without `..`, `//` or a
 * trailing `/`, `.` or `.lock` (a subset of what git accepts, so nothing reads as an option).
 */
export function isFetchableRef(ref: string): boolean {
  return (
    /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$/.test(ref) &&
    !ref.includes('..') &&
    !ref.includes('//') &&
    !ref.includes('/.') &&
    !/(\/|\.|\.lock)$/.test(ref)
  );
}

/** Whether `ref` may name a commit (4 to 40 hexadecimal digits). */
export function looksLikeCommit(ref: string): boolean {
  return /^[0-9a-f]{4,40}$/.test(ref);
}

/** Whether a URL may be handed to git: not empty, no option (`-…`), no control characters or spaces. */
export function isFetchableUrl(url: string): boolean {
  // eslint-disable-next-line no-control-regex
  return url.length > 0 && url.length <= 2048 && !url.startsWith('-') && !/[\s\u0000-\u001f\u007f]/.test(url);
}

/** The name of a fetched buildpack: its URL, with `#ref` when a ref was asked. */
export function fetchedName(url: string, ref: string | null): string {
  return ref === null ? url : `${url}#${ref}`;
}

/** The directory name a fetch of `url` at `ref` is kept under: the SHA-256 of its name. */
export function fetchKey(url: string, ref: string | null): string {
  return createHash('sha256').update(fetchedName(url, ref)).digest('hex');
}

/** A URL fit to print: any user name and password in it replaced by `***`. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1***@');
}
