import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { Server, utils, type AuthContext, type ClientInfo, type Connection, type ServerChannel, type Session } from 'ssh2';
import { ConnectionLedger, DomainError } from '@svc/core';
import { SourceBuilder, type GitLogger, type GitUseCases, type Push } from './builder';
import { parseGitCommand } from './command';
import { HOOK_PROGRAM, HOOK_VARIABLES, HookEndpoint } from './hook';
import { fingerprintOf } from './keys';
import { KeyedMutex } from './mutex';
import { RepositoryStore } from './repositories';

/** What the git server needs. */
export interface GitServerOptions {
  /** The core's use cases that authenticate keys, authorize access and deploy pushed commits. */
  useCases: GitUseCases;
  /** Where the bare repositories are kept, as `<repositories>/<app>.git`. */
  repositories: string;
  /** Where build directories are kept, as `<builds>/<app>/<sha>`. */
  builds: string;
  /** The server's SSH host private key (OpenSSH or PEM). */
  hostKey: string;
  logger?: GitLogger;
  /** The address of a deployed app, shown to the pusher; null shows none. */
  appUrl?: (appId: string) => string | null;
  /** The Node.js binary the pre-receive hook runs with; default this process's. */
  nodePath?: string;
  /** How long a connection may take to authenticate, in ms, from connecting on. Default 60 s. */
  authTimeoutMs?: number;
  /** Open connections in all; one more is closed at once. Default unlimited. */
  maxConnections?: number;
  /** Open connections from one client address (an IPv6 /64 counts as one); one more is closed at once. Default unlimited. */
  maxConnectionsPerAddress?: number;
  /** The last places of `maxConnections`, for clients that hold no connection yet (ConnectionCaps). Default none. */
  reservedConnections?: number;
}

/** Who a connection authenticated as. */
interface Identity {
  fingerprint: string;
  username: string;
}

const silentLogger: GitLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const MAX_AUTH_ATTEMPTS = 20;
/** Values of GIT_PROTOCOL git sends, e.g. `version=2`; anything else is not passed on. */
const GIT_PROTOCOL = /^[A-Za-z0-9=:.,_-]{1,256}$/;

/** A public-key authentication attempt: the key's blob, and the signature when the client proves it holds the key. */
function parsePublicKey(ctx: AuthContext & { method: 'publickey' }): { fingerprint: string; verified: boolean | null } | null {
  const parsed = utils.parseKey(ctx.key.data);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key === undefined || key instanceof Error) return null;
  const fingerprint = fingerprintOf(ctx.key.data);
  if (ctx.signature === undefined || ctx.blob === undefined) return { fingerprint, verified: null };
  return { fingerprint, verified: key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true };
}

/** Copies a stream into a channel and resolves once the channel has taken the last byte. */
function pump(from: Readable, to: Writable): Promise<void> {
  return new Promise<void>((done) => {
    let last: Promise<void> = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      last = new Promise<void>((written) => {
        if (!to.write(chunk, () => written())) {
          from.pause();
          to.once('drain', () => from.resume());
        }
      });
    });
    from.once('end', () => void last.then(done));
    from.once('error', () => done());
  });
}

/**
 * An SSH server that serves each app's git repository: public-key authentication against
 * the keys users registered (no passwords), `git-receive-pack` (push) and `git-upload-pack`
 * (fetch, clone) of `<app>` or `<app>.git` for the app's owner, collaborators and
 * administrators, and nothing else. A push to the deployed branch is built and released
 * before its ref moves.
 */
export class GitServer {
  private readonly server: Server;
  private readonly store: RepositoryStore;
  private readonly builder: SourceBuilder;
  private readonly logger: GitLogger;
  private readonly locks = new KeyedMutex();
  private readonly connections = new Set<Connection>();
  private readonly children = new Set<ChildProcess>();
  private readonly operations = new Set<Promise<unknown>>();
  private readonly hookDir: string;
  private readonly nodePath: string;
  private readonly authTimeoutMs: number;
  /** Accepts TCP connections, counts them, and hands those it admits to the SSH server. */
  private readonly tcp: NetServer;
  private readonly ledger: ConnectionLedger;
  /** Sockets admitted but not yet authenticated, by `<address>:<port>`, with the timer that ends them. */
  private readonly unauthenticated = new Map<string, { socket: Socket; timer: NodeJS.Timeout }>();
  private closing: Promise<void> | null = null;

  constructor(private readonly options: GitServerOptions) {
    this.logger = options.logger ?? silentLogger;
    this.store = new RepositoryStore(resolve(options.repositories), resolve(options.builds));
    this.builder = new SourceBuilder(options.useCases, this.store, this.logger, options.appUrl ?? (() => null));
    this.nodePath = options.nodePath ?? process.execPath;
    this.authTimeoutMs = options.authTimeoutMs ?? 60_000;
    this.ledger = new ConnectionLedger({
      maxConnections: options.maxConnections ?? Infinity,
      maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? Infinity,
      reservedConnections: options.reservedConnections ?? 0,
    });
    // Hook sockets live in a directory only this process's user may enter (Unix socket paths must stay short).
    this.hookDir = mkdtempSync(join(tmpdir(), 'svc-git-'));
    this.server = new Server({ hostKeys: [options.hostKey], ident: 'svc-git' }, (client, info) => this.accept(client, info));
    this.tcp = createServer((socket) => this.admit(socket));
  }

  /**
   * Counts the connection in all and per client (ConnectionLedger: the reserved last places
   * go to clients holding none) and closes it at once past a limit; an admitted connection
   * has `authTimeoutMs` to authenticate (a client that never even sends its SSH version line
   * included), then goes to the SSH server.
   */
  private admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    if (this.closing !== null) {
      socket.destroy();
      return;
    }
    const admitted = this.ledger.admit(address);
    if ('refused' in admitted) {
      this.logger.warn({ client: address, open: this.ledger.open, fromAddress: this.ledger.openFrom(address), reason: admitted.refused }, 'git connection refused: too many open');
      socket.destroy();
      return;
    }
    const key = `${address}:${socket.remotePort ?? ''}`;
    const timer = setTimeout(() => socket.destroy(), this.authTimeoutMs);
    this.unauthenticated.set(key, { socket, timer });
    socket.once('close', () => {
      clearTimeout(timer);
      if (this.unauthenticated.get(key)?.socket === socket) this.unauthenticated.delete(key);
      admitted.release();
    });
    // A client that resets the connection is not the server's problem.
    socket.on('error', () => undefined);
    this.server.injectSocket(socket);
  }

  /** The connection authenticated: its socket may live as long as its work takes. */
  private authenticated(info: ClientInfo): void {
    const key = `${info.ip}:${info.port}`;
    const pending = this.unauthenticated.get(key);
    if (pending === undefined) return;
    clearTimeout(pending.timer);
    this.unauthenticated.delete(key);
  }

  /** Starts listening; resolves with the address (port 0 picks a free port). */
  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise<AddressInfo>((resolveListen, reject) => {
      this.tcp.once('error', reject);
      this.tcp.listen(port, host, () => {
        this.tcp.off('error', reject);
        this.tcp.on('error', (error: Error) => this.logger.error({ err: error }, 'git server error'));
        resolveListen(this.tcp.address() as AddressInfo);
      });
    });
  }

  /** The address the server listens on, or null before `listen`. */
  address(): AddressInfo | null {
    const address = this.tcp.address();
    return address !== null && typeof address === 'object' ? address : null;
  }

  /**
   * Stops accepting connections, lets running pushes and fetches finish for up to
   * `graceMs`, then ends what is left. Idempotent.
   */
  close(graceMs = 10_000): Promise<void> {
    this.closing ??= (async () => {
      const stopped = new Promise<void>((done) => this.tcp.close(() => done()));
      if (this.operations.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...this.operations]),
          new Promise<void>((done) => {
            timer = setTimeout(done, graceMs);
          }),
        ]);
        clearTimeout(timer);
      }
      for (const child of this.children) child.kill('SIGTERM');
      for (const connection of this.connections) connection.end();
      await Promise.allSettled([...this.operations]);
      for (const { socket } of this.unauthenticated.values()) socket.destroy();
      if (this.tcp.listening) await stopped;
      rmSync(this.hookDir, { recursive: true, force: true });
    })();
    return this.closing;
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.operations.add(work);
    const forget = (): void => {
      this.operations.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  private accept(client: Connection, info: ClientInfo): void {
    if (this.closing !== null) {
      client.end();
      return;
    }
    this.connections.add(client);
    let identity: Identity | null = null;
    let attempts = 0;
    const timer = setTimeout(() => {
      if (identity === null) client.end();
    }, this.authTimeoutMs);
    client.on('close', () => {
      clearTimeout(timer);
      this.connections.delete(client);
    });
    // A client that vanishes mid-handshake is not the server's problem.
    client.on('error', () => undefined);
    // The client may have gone while its key was looked up.
    const answer = (reply: () => void): void => {
      try {
        reply();
      } catch {
        client.end();
      }
    };
    client.on('authentication', (ctx) => {
      attempts += 1;
      if (attempts > MAX_AUTH_ATTEMPTS) {
        ctx.reject();
        client.end();
        return;
      }
      if (ctx.method !== 'publickey') {
        ctx.reject(['publickey']);
        return;
      }
      const key = parsePublicKey(ctx);
      if (key === null || key.verified === false) {
        ctx.reject(['publickey']);
        return;
      }
      this.options.useCases.authenticateKey.execute(key.fingerprint).then(
        (user) => {
          // Without a signature the client only asks whether the key would do; it has not proved it holds it yet.
          if (key.verified === true) identity = { fingerprint: key.fingerprint, username: user.username };
          answer(() => ctx.accept());
        },
        (error: unknown) => {
          if (!DomainError.is(error)) this.logger.error({ err: error }, 'git ssh authentication failed');
          answer(() => ctx.reject(['publickey']));
        },
      );
    });
    client.on('ready', () => {
      this.authenticated(info);
      client.on('session', (acceptSession, rejectSession) => {
        if (identity === null) rejectSession();
        else this.session(acceptSession(), identity);
      });
    });
  }

  private session(session: Session, identity: Identity): void {
    let protocol: string | null = null;
    session.on('env', (accept, reject, info) => {
      if (info.key === 'GIT_PROTOCOL' && GIT_PROTOCOL.test(info.val)) {
        protocol = info.val;
        accept?.();
      } else {
        reject?.();
      }
    });
    session.on('pty', (_accept, reject) => reject?.());
    session.on('x11', (_accept, reject) => reject?.());
    session.on('auth-agent', (_accept, reject) => reject?.());
    session.on('sftp', (_accept, reject) => reject());
    session.on('subsystem', (_accept, reject) => reject());
    session.on('shell', (accept) => {
      const channel = accept();
      const port = this.address()?.port ?? 2222;
      this.finish(
        channel,
        this.refuse(
          channel,
          `Hi ${identity.username}! You are authenticated, but this server only serves git. ` +
            `Add an app's repository as a remote (git remote add svc ssh://git@<host>:${port}/<app>.git) and git push to it.`,
        ),
      );
    });
    session.on('exec', (accept, _reject, info) => {
      const channel = accept();
      this.finish(channel, this.track(this.exec(channel, identity, info.command, protocol)));
    });
  }

  /** Sends the exit status, then closes the channel. */
  private finish(channel: ServerChannel, status: Promise<number> | number): void {
    Promise.resolve(status)
      .catch((error: unknown) => {
        this.logger.error({ err: error }, 'git request failed');
        if (channel.writable) channel.stderr.write('svc: the server failed to complete this request.\n');
        return 1;
      })
      .then((code) => {
        if (!channel.writable) return;
        channel.exit(code);
        channel.end();
      });
  }

  /** Tells the client why, and resolves with exit status 1 once the message is on its way. */
  private refuse(channel: ServerChannel, message: string): Promise<number> {
    return new Promise<number>((done) => {
      channel.once('close', () => done(1));
      channel.stderr.write(`svc: ${message}\n`, () => done(1));
    });
  }

  private async exec(channel: ServerChannel, identity: Identity, command: string, protocol: string | null): Promise<number> {
    const request = parseGitCommand(command);
    if (!request.ok) return await this.refuse(channel, request.message);
    let access;
    try {
      // Checked on every request: a key deleted or an account cancelled a moment ago no longer opens anything.
      access = await this.options.useCases.authorizeGitAccess.execute(identity.fingerprint, request.appId);
    } catch (error) {
      if (!DomainError.is(error)) throw error;
      this.logger.info({ user: identity.username, app: request.appId, service: request.service, code: error.code }, 'git access refused');
      if (error.kind === 'unauthenticated') {
        return await this.refuse(channel, 'this SSH key is no longer registered with an active account; register it again with POST /v1/keys/.');
      }
      return await this.refuse(
        channel,
        `${request.appId}.git: no such app, or ${identity.username} may not use it. ` +
          "Only the app's owner, its collaborators and administrators may push to it or fetch from it.",
      );
    }
    const app = { id: access.app.id, uuid: access.app.uuid };
    if (request.service === 'git-upload-pack') {
      const repository = await this.locks.run(app.id, () => this.store.prepare(app));
      return this.runGit(channel, ['upload-pack', '--strict', repository], protocol, {});
    }
    if (this.locks.busy(app.id)) channel.stderr.write(`svc: waiting for another push to ${app.id} to finish...\n`);
    return this.locks.run(app.id, async () => {
      const repository = await this.store.prepare(app);
      const push: Push = { fingerprint: identity.fingerprint, username: access.user.username, app, repository };
      let verdict = 0;
      // Recreated when missing: a cleaner of the temporary directory may have removed it.
      mkdirSync(this.hookDir, { recursive: true, mode: 0o700 });
      const endpoint = await HookEndpoint.listen(
        join(this.hookDir, `${randomBytes(8).toString('hex')}.sock`),
        async (hookRequest, say) => {
          verdict = 1;
          verdict = await this.builder.preReceive(push, hookRequest, say);
          return verdict;
        },
        (error) => this.logger.error({ err: error, app: app.id, user: push.username }, 'git push failed'),
      );
      try {
        const hooks = join(repository, 'hooks');
        const status = await this.runGit(channel, ['-c', `core.hooksPath=${hooks}`, 'receive-pack', repository], protocol, {
          [HOOK_VARIABLES.socket]: endpoint.path,
          [HOOK_VARIABLES.node]: this.nodePath,
          [HOOK_VARIABLES.program]: HOOK_PROGRAM,
        });
        // receive-pack reports a refused ref to the client and still exits 0: the push as a whole failed.
        return status !== 0 ? status : verdict;
      } finally {
        await endpoint.close();
      }
    });
  }

  /** Runs a git service with the channel as its standard input and output; resolves with its exit status. */
  private runGit(channel: ServerChannel, args: string[], protocol: string | null, extra: Record<string, string>): Promise<number> {
    const env = this.store.environment({ ...extra, ...(protocol === null ? {} : { GIT_PROTOCOL: protocol }) });
    const child = spawn('git', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.children.add(child);
    child.stdin.on('error', () => undefined);
    channel.pipe(child.stdin);
    const output = Promise.all([pump(child.stdout, channel), pump(child.stderr, channel.stderr)]);
    const exited = new Promise<number>((done) => {
      child.once('error', () => done(1));
      child.once('close', (code) => done(code ?? 1));
    });
    const channelClosed = new Promise<void>((done) => channel.once('close', () => done()));
    void channelClosed.then(() => {
      // The client went away: nobody is left to talk to.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    });
    return Promise.race([Promise.all([exited, output]).then(([code]) => code), channelClosed.then(() => exited)]).finally(() => {
      this.children.delete(child);
    });
  }
}
