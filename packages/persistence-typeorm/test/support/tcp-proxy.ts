import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP forwarder that a test can cut and restore, to make a database unreachable without
 * touching the database server: `cut()` closes the listener and destroys every forwarded
 * connection (clients see their connections drop and new ones refused), `restore()` listens
 * again on the same port.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private listenPort = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Starts forwarding from a free local port to `targetHost:targetPort`. */
  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await proxy.restore();
    return proxy;
  }

  /** The local port clients connect to; stable across cut and restore. */
  get port(): number {
    return this.listenPort;
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const rewritten = new URL(url);
    rewritten.hostname = '127.0.0.1';
    rewritten.port = String(this.listenPort);
    return rewritten.toString();
  }

  /** Listens again (on the same port once one was chosen). */
  async restore(): Promise<void> {
    if (this.server !== null) return;
    const server = createServer((client) => this.forward(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.listenPort, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.listenPort = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Refuses new connections and drops every open one. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private forward(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
