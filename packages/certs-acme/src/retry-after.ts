/**
 * The time a `Retry-After` header names (RFC 9110 §10.2.3): seconds from `now`, or an HTTP
 * date; null when absent, unreadable or not in the future.
 */
export function retryAfterOf(header: unknown, now: Date): Date | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return seconds > 0 ? new Date(now.getTime() + seconds * 1000) : null;
  }
  const date = new Date(text);
  return Number.isNaN(date.getTime()) || date.getTime() <= now.getTime() ? null : date;
}
