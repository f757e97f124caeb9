import type { Socket } from 'node:net';

/** A line longer than this on a control socket ends the connection: the peer is not speaking the protocol. */
const MAX_LINE = 16 * 1024 * 1024;

/**
 * Reads one JSON object a line from a control socket and hands each to `onMessage`; a line
 * that is not JSON, or a runaway one, ends the connection.
 */
export function readLines<T>(socket: Socket, onMessage: (message: T) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let end = buffered.indexOf('\n');
    while (end >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      if (line !== '') {
        let message: T;
        try {
          message = JSON.parse(line) as T;
        } catch {
          socket.destroy();
          return;
        }
        onMessage(message);
      }
      end = buffered.indexOf('\n');
    }
    if (buffered.length > MAX_LINE) socket.destroy();
  });
}

/** Writes one message as a line; nothing when the socket is gone. */
export function writeLine(socket: Socket, message: object): void {
  if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(message)}\n`);
}
