import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { GitServer, loadOrCreateHostKey } from '@svc/builder-git';
import { FakeController } from './support/core';
import { keyPair, run, sshArgs, type KeyPair } from './support/git-client';

jest.setTimeout(60_000);

/** A git server with these connection limits on a free port of 127.0.0.1, alice (with a key) among its users. */
async function limitedServer(
  prefix: string,
  limits: { maxConnections: number; maxConnectionsPerAddress: number; reservedConnections?: number; authTimeoutMs: number },
): Promise<{ root: string; key: KeyPair; server: GitServer; port: number }> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const controller = new FakeController();
  await controller.user('root');
  const alice = await controller.user('alice');
  const key = await keyPair(root, 'alice');
  await controller.useCases.addKey.execute(alice, { id: 'laptop', public: key.publicKey });
  const server = new GitServer({
    useCases: controller.useCases,
    repositories: join(root, 'git'),
    builds: join(root, 'builds'),
    hostKey: loadOrCreateHostKey(join(root, 'ssh_host_ed25519_key')).privateKey,
    ...limits,
  });
  return { root, key, server, port: (await server.listen(0, '127.0.0.1')).port };
}

/** Connection limits of the git server, with raw TCP clients and a real ssh client. */
describe('GitServer connection limits', () => {
  let root: string;
  let server: GitServer;
  let port: number;
  let key: KeyPair;

  beforeAll(async () => {
    ({ root, key, server, port } = await limitedServer('svc-git-limits-', { maxConnections: 6, maxConnectionsPerAddress: 3, authTimeoutMs: 1500 }));
  });

  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  /** A TCP connection from `localAddress` that sends nothing; resolves once connected. */
  const idle = (localAddress: string): Promise<Socket> =>
    new Promise((resolveConnect, reject) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress }, () => resolveConnect(socket));
      socket.on('error', reject);
      // Read (and drop) what the server says, so that its closing the connection is noticed.
      socket.resume();
    });
  const closed = (socket: Socket): Promise<number> => {
    const started = Date.now();
    return new Promise((done) => socket.once('close', () => done(Date.now() - started)));
  };
  /** Whether the server greets a new connection from `localAddress` with its SSH version line. */
  const greeted = (localAddress: string): Promise<boolean> =>
    new Promise((done) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress });
      socket.once('data', (data: Buffer) => {
        socket.destroy();
        done(data.toString('latin1').startsWith('SSH-2.0-'));
      });
      socket.once('close', () => done(false));
      socket.on('error', () => done(false));
    });

  it('closes a connection past the per-address limit at once, while another address is still served', async () => {
    const held = await Promise.all([idle('127.0.0.2'), idle('127.0.0.2'), idle('127.0.0.2')]);
    try {
      expect(await greeted('127.0.0.2')).toBe(false);
      expect(await greeted('127.0.0.3')).toBe(true);
      const outcome = await run('ssh', [...sshArgs(key, port), 'git@127.0.0.1', 'true']);
      expect(outcome.stderr).toContain('only accepts git push');
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('ends a connection that does not authenticate in time, even one that never says a word', async () => {
    const socket = await idle('127.0.0.4');
    const waited = await closed(socket);
    expect(waited).toBeGreaterThanOrEqual(1000);
    expect(waited).toBeLessThan(15_000);
  });
});

/** The git server's total against many client addresses (127.0.0.10 … 127.0.0.29, and 127.0.0.2 arriving last). */
describe('GitServer connection caps against many addresses', () => {
  let root: string;
  let server: GitServer;
  let port: number;
  let key: KeyPair;
  const held: Socket[] = [];

  beforeAll(async () => {
    ({ root, key, server, port } = await limitedServer('svc-git-many-', { maxConnections: 30, maxConnectionsPerAddress: 3, reservedConnections: 24, authTimeoutMs: 30_000 }));
  });

  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  /** Whether the server greets a connection from `localAddress` with its SSH version line; the connection is kept open when it does. */
  const greeted = (localAddress: string): Promise<boolean> =>
    new Promise((done) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress });
      socket.on('error', () => done(false));
      socket.once('close', () => done(false));
      socket.once('data', (data: Buffer) => {
        held.push(socket);
        done(data.toString('latin1').startsWith('SSH-2.0-'));
      });
    });

  it('20 addresses each opening all they may get one reserved place each past the shared ones; a newcomer and a real ssh client still get in', async () => {
    let admitted = 0;
    for (let a = 10; a < 30; a++) {
      for (let n = 0; n < 3; n++) if (await greeted(`127.0.0.${a}`)) admitted += 1;
    }

    // Two addresses fill the 6 shared places; each of the 18 others gets one of the 24 reserved.
    expect(admitted).toBe(6 + 18);
    expect(await greeted('127.0.0.2')).toBe(true);
    // A real ssh client from yet another address is served too.
    const outcome = await run('ssh', [...sshArgs(key, port), '-b', '127.0.0.3', 'git@127.0.0.1', 'true']);
    expect(outcome.stderr).toContain('only accepts git push');
  });
});
