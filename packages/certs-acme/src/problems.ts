/**
 * The reason an app's owner is shown for a failed issuance: the ACME server's problem detail
 * as the client library reports it, on one line and bounded; a failure to reach the server
 * says so.
 */
export function reasonOf(error: unknown, directory: string): string {
  const message = error instanceof Error ? error.message : String(error);
  // The library fails this way when the server gave no answer at all (refused, reset, DNS).
  // (The library's answer to no response at all is a TypeError of its own, which says nothing useful.)
  if (error instanceof TypeError) return `the ACME server at ${directory} could not be reached`;
  if (/ECONNREFUSED|ENOTFOUND|ECONNRESET|ETIMEDOUT|EAI_AGAIN|certificate/i.test(message)) {
    return `the ACME server at ${directory} could not be reached (${oneLine(message)})`;
  }
  return oneLine(message) || 'the ACME server refused the order without a reason';
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 500 ? `${flat.slice(0, 497)}...` : flat;
}
