/**
 * Headers the router passes on whatever a `Connection` header lists: `Host` names the app the
 * request was routed to, and `Content-Length` frames the body that follows. Dropping either
 * because a client (or a process) listed it would send the process a request other than the
 * one routed, or a body it reads as the next request.
 */
export const KEPT_WHATEVER_CONNECTION_LISTS: ReadonlySet<string> = new Set(['host', 'content-length']);

/** The names a message's `Connection` headers list as hop-by-hop, less those always kept; null without any. */
export function connectionListed(names: readonly string[] | null): Set<string> | null {
  if (names === null) return null;
  const listed = new Set(names);
  for (const kept of KEPT_WHATEVER_CONNECTION_LISTS) listed.delete(kept);
  return listed;
}
