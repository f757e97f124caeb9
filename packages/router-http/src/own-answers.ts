import { STATUS_CODES } from 'node:http';

/**
 * An answer of the router itself, as bytes: plain text (never JSON), not cached, no body for
 * HEAD; `connection` names what happens to the client's connection (null: kept, HTTP/1.1).
 */
export function ownAnswer(status: number, text: string, head: boolean, connection: 'close' | 'keep-alive' | null, location: string | null = null): string {
  const length = Buffer.byteLength(text);
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${length}\r\nCache-Control: no-store\r\n` +
    `${location === null ? '' : `Location: ${location}\r\n`}` +
    `${connection === null ? '' : `Connection: ${connection}\r\n`}\r\n${head ? '' : text}`
  );
}
