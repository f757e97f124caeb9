const NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;
const PORT = /^[0-9]{1,5}$/;

/**
 * The host name of a `Host` header or TLS server name: lower case, without port and
 * without one trailing dot. Null when absent or not a host name (an IPv6 literal, for one:
 * apps are reached by name).
 */
export function hostNameOf(value: string | undefined): string | null {
  if (value === undefined) return null;
  let host = value.trim().toLowerCase();
  const colon = host.lastIndexOf(':');
  if (colon !== -1) {
    if (!PORT.test(host.slice(colon + 1))) return null;
    host = host.slice(0, colon);
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.length === 0 || host.length > 253 || !NAME.test(host)) return null;
  return host;
}

/** The wildcard name that covers a host name (`*.example.com` for `www.example.com`), or null for a name of fewer than three labels. */
export function wildcardOf(host: string): string | null {
  const dot = host.indexOf('.');
  if (dot === -1) return null;
  const parent = host.slice(dot + 1);
  return parent.includes('.') ? `*.${parent}` : null;
}
