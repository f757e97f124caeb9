import { createServer, type Server, type Socket } from 'node:net';
import { rm } from 'node:fs/promises';

/*
 * The pre-receive hook: git runs it after a push's objects have arrived (still in
 * quarantine) and before any ref moves. It hands the ref updates to the controller over a
 * Unix socket that exists only for this push, prints what the controller says (git shows
 * it to the pusher as `remote:` lines) and exits with the controller's verdict: a refused
 * build leaves every ref where it was.
 */

/** The variables the hook finds the controller with. */
export const HOOK_VARIABLES = Object.freeze({
  socket: 'SVC_GIT_HOOK_SOCKET',
  node: 'SVC_GIT_NODE',
  program: 'SVC_GIT_HOOK_PROGRAM',
});

/** The hook file installed in every repository: a trampoline into the program the controller passes. */
export const PRE_RECEIVE_SCRIPT = `#!/bin/sh
# Installed by the platform's git server: the controller builds and releases a push before its refs move.
if [ -z "$${HOOK_VARIABLES.socket}" ] || [ -z "$${HOOK_VARIABLES.node}" ] || [ -z "$${HOOK_VARIABLES.program}" ]; then
  echo "Pushes to this repository go through the platform's git server (git push over SSH)." >&2
  exit 1
fi
exec "$${HOOK_VARIABLES.node}" -e "$${HOOK_VARIABLES.program}"
`;

/** The hook's program, run with `node -e`: plain JavaScript without dependencies. */
export const HOOK_PROGRAM = `
const net = require('node:net');
const fail = (message) => { process.stderr.write(message + '\\n'); process.exit(1); };
let updates = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { updates += chunk; });
process.stdin.on('end', () => {
  const socket = net.connect(process.env.${HOOK_VARIABLES.socket});
  let buffered = '';
  let verdict = null;
  socket.setEncoding('utf8');
  socket.on('connect', () => socket.write(JSON.stringify({
    updates,
    objectDirectory: process.env.GIT_OBJECT_DIRECTORY || '',
    alternates: process.env.GIT_ALTERNATE_OBJECT_DIRECTORIES || '',
    cwd: process.cwd(),
  }) + '\\n'));
  socket.on('data', (chunk) => {
    buffered += chunk;
    let end;
    while ((end = buffered.indexOf('\\n')) >= 0) {
      const message = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      if (typeof message.say === 'string') process.stdout.write(message.say + '\\n');
      if (typeof message.exit === 'number') verdict = message.exit;
    }
  });
  socket.on('error', () => fail('The controller could not be reached; the push is refused.'));
  socket.on('close', () => {
    if (verdict === null) fail('The controller stopped before finishing this push; the push is refused.');
    process.stdout.write('', () => process.exit(verdict));
  });
});
`;

/** What the hook reports: git's ref updates and where the pushed objects wait. */
export interface HookRequest {
  /** git's lines `<old sha> <new sha> <ref name>`. */
  updates: string;
  /** The quarantine object directory of the push. */
  objectDirectory: string;
  /** The repository's own object directories. */
  alternates: string;
  /** The hook's working directory: the repository. */
  cwd: string;
}

/** Decides one push: says what happens (each call is one line for the pusher) and resolves with the exit status. */
export type HookHandler = (request: HookRequest, say: (line: string) => void) => Promise<number>;

function parseRequest(line: string): HookRequest | null {
  try {
    const value = JSON.parse(line) as Record<string, unknown>;
    const fields = ['updates', 'objectDirectory', 'alternates', 'cwd'] as const;
    if (fields.every((field) => typeof value[field] === 'string')) return value as unknown as HookRequest;
  } catch {
    // Answered as a refusal below.
  }
  return null;
}

/** The socket a push's hook talks to; it serves one push. */
export class HookEndpoint {
  private readonly sockets = new Set<Socket>();
  private readonly handling = new Set<Promise<unknown>>();

  private constructor(
    readonly path: string,
    private readonly server: Server,
  ) {}

  /** Listens on `path` (a Unix socket in a directory only the controller can enter) for the hook of one push. */
  static async listen(path: string, handler: HookHandler, onError: (error: unknown) => void): Promise<HookEndpoint> {
    const server = createServer();
    const endpoint = new HookEndpoint(path, server);
    server.on('connection', (socket) => endpoint.serve(socket, handler, onError));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return endpoint;
  }

  private serve(socket: Socket, handler: HookHandler, onError: (error: unknown) => void): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = '';
    let started = false;
    const send = (message: object): void => {
      if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (started) return;
      buffered += chunk;
      const end = buffered.indexOf('\n');
      if (end < 0) {
        if (buffered.length > 1024 * 1024) socket.destroy();
        return;
      }
      started = true;
      const request = parseRequest(buffered.slice(0, end));
      if (request === null) {
        send({ say: 'The push could not be read; it is refused.', exit: 1 });
        socket.end();
        return;
      }
      const handled = handler(request, (line) => send({ say: line }));
      this.handling.add(handled);
      const forget = (): void => {
        this.handling.delete(handled);
      };
      handled.then(forget, forget);
      handled.then(
        (status) => {
          send({ exit: status });
          socket.end();
        },
        (error: unknown) => {
          onError(error);
          send({ say: 'The push failed on the controller; it is refused.', exit: 1 });
          socket.end();
        },
      );
    });
  }

  /**
   * Stops listening and removes the socket file, once the push being decided is decided: a
   * deploy that has started is never abandoned halfway, even when the pusher went away.
   */
  async close(): Promise<void> {
    await Promise.allSettled([...this.handling]);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await rm(this.path, { force: true });
  }
}
