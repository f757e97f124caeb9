import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { md, pki } from 'node-forge';
import { AppRouter, type ResolvedRoute, type RouteTable, type RouteTarget, type RouterLogger } from '../src';

/** What an upstream saw of one request. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP server standing in for one web process of an app. */
export interface Upstream {
  readonly name: string;
  readonly target: RouteTarget;
  readonly seen: SeenRequest[];
  /** Stops accepting connections; requests in flight finish. */
  close(): Promise<void>;
  server: Server;
}

/** What an upstream does with a request; by default it answers 200 with its name and what it saw, as JSON. */
export type Handler = (req: IncomingMessage, res: ServerResponse, body: string, name: string) => void;

const describeRequest: Handler = (req, res, body, name) => {
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ name, method: req.method, url: req.url, headers: req.headers, body }));
};

/** Starts an upstream on a free port of 127.0.0.1. */
export async function startUpstream(name: string, handler: Handler = describeRequest): Promise<Upstream> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body, name);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    target: { host: '127.0.0.1', port },
    seen,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A port on 127.0.0.1 where nothing listens (taken, then released). */
export async function deadTarget(): Promise<RouteTarget> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { host: '127.0.0.1', port };
}

/** A route table the test changes as it goes; it records the host names asked for. */
export class FakeRouteTable implements RouteTable {
  readonly routes = new Map<string, ResolvedRoute>();
  readonly asked: string[] = [];
  failure: Error | null = null;

  set(host: string, app: string, targets: RouteTarget[]): void {
    this.routes.set(host, { app, targets });
  }

  async resolve(host: string): Promise<ResolvedRoute | null> {
    this.asked.push(host);
    if (this.failure !== null) throw this.failure;
    const route = this.routes.get(host);
    return route === undefined ? null : { ...route, targets: [...route.targets] };
  }
}

/** A logger that keeps what it was given. */
export class RecordingLogger implements RouterLogger {
  readonly lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg });
  }
}

/** What `routerPerTest` makes before each test. */
export interface RouterUnderTest {
  routes: FakeRouteTable;
  logger: RecordingLogger;
  router: AppRouter;
  port: number;
}

/**
 * Before each test of the enclosing describe, an AppRouter on a free port of 127.0.0.1 over a
 * fresh FakeRouteTable and RecordingLogger, handed to `made`; after each, that router closed and
 * every upstream the test started through the returned `upstream` closed too.
 */
export function routerPerTest(made: (router: RouterUnderTest) => void): {
  upstream: (name: string, handler?: Handler) => Promise<Upstream>;
} {
  const upstreams: Upstream[] = [];
  let current: AppRouter | null = null;

  beforeEach(async () => {
    const routes = new FakeRouteTable();
    const logger = new RecordingLogger();
    const router = new AppRouter({ routes, logger, connectTimeoutMs: 1000 });
    current = router;
    const { port } = await router.listen(0, '127.0.0.1');
    made({ routes, logger, router, port });
  });

  afterEach(async () => {
    await current?.close(1000);
    for (const u of upstreams.splice(0)) {
      u.server.closeAllConnections();
      await u.close();
    }
  });

  return {
    async upstream(name, handler) {
      const started = await startUpstream(name, handler);
      upstreams.push(started);
      return started;
    },
  };
}

/** An answer as the client received it. */
export interface Received {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Sends one request to the router on its own connection. */
export function send(
  port: number,
  options: { host: string; method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<Received> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        // Node frames a GET body only when told its length.
        headers: { Host: options.host, ...(options.body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(options.body)) }), ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The JSON an upstream with the default handler answers. */
export interface Described {
  name: string;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Parses the default handler's answer. */
export function described(received: Received): Described {
  return JSON.parse(received.body) as Described;
}

/** Reads from a raw socket until `done` says the text so far is complete. */
export function readUntil(socket: Socket, done: (text: string) => boolean, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`Timed out; received so far: ${JSON.stringify(text)}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('utf8');
      if (done(text)) {
        clearTimeout(timer);
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/** A self-signed RSA certificate and its key, as PEM. */
export function selfSigned(commonName: string, dnsNames: string[] = [commonName]): { certificate: string; key: string } {
  const keys = pki.rsa.generateKeyPair({ bits: 2048 });
  const certificate = pki.createCertificate();
  certificate.publicKey = keys.publicKey;
  certificate.serialNumber = `0${Math.floor(Math.random() * 1e9).toString(16)}`;
  certificate.validity.notBefore = new Date(Date.now() - 24 * 3600 * 1000);
  certificate.validity.notAfter = new Date(Date.now() + 365 * 24 * 3600 * 1000);
  const subject = [{ shortName: 'CN', value: commonName }];
  certificate.setSubject(subject);
  certificate.setIssuer(subject);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
  ]);
  certificate.sign(keys.privateKey, md.sha256.create());
  return { certificate: pki.certificateToPem(certificate), key: pki.privateKeyToPem(keys.privateKey) };
}

/** Resolves after `ms` milliseconds. */
export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds, checking every `everyMs`; rejects after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000, everyMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await pause(everyMs);
  }
}
