/*
 * A router worker: a process forked by RouterCluster that runs an AppRouter on the listening
 * sockets it shares with the other workers. It routes from its copy of the routes (every one
 * when the route table can list them), which the controller sends before the listeners and
 * keeps current; it asks the controller only for a host name it does not know yet and for
 * certificates. It writes its own log lines (JSON, one a line, pino's shape) to the
 * standard output it shares with the controller, and ends when the controller's IPC channel
 * goes away, whatever the reason.
 */
import type { ResolvedRoute, RouterLogger, ServedCertificate } from './ports';
import { LEVELS, type FromWorker, type ListenerSpec, type LogLevel, type ToWorker, type WorkerSettings } from './protocol';
import { RouteCache } from './route-cache';
import { AppRouter } from './router';

type Pending<T> = { resolve: (value: T) => void; reject: (error: Error) => void };

const send = (message: FromWorker): void => {
  if (process.connected) process.send?.(message);
};

/** Log lines as pino writes them, filtered by level. */
function jsonLogger(level: LogLevel, worker: number): RouterLogger {
  const threshold = LEVELS[level];
  const write = (value: number, obj: object, msg: string): void => {
    if (value < threshold) return;
    const fields: Record<string, unknown> = { ...obj };
    if (fields.err instanceof Error) fields.err = { type: fields.err.name, message: fields.err.message, stack: fields.err.stack };
    process.stdout.write(`${JSON.stringify({ level: value, time: Date.now(), routerWorker: worker, ...fields, msg })}\n`);
  };
  return {
    info: (obj, msg) => write(LEVELS.info, obj, msg),
    warn: (obj, msg) => write(LEVELS.warn, obj, msg),
    error: (obj, msg) => write(LEVELS.error, obj, msg),
  };
}

let nextId = 1;
const routeLookups = new Map<number, Pending<ResolvedRoute | null>>();
const certificateLookups = new Map<number, Pending<ServedCertificate | null>>();
const challengeLookups = new Map<number, Pending<string | null>>();
let router: AppRouter | null = null;
let routes: RouteCache | null = null;
let batch: Array<[string | null, number, number]> = [];
let flusher: ReturnType<typeof setInterval> | null = null;
let closing = false;

function ask<T>(pending: Map<number, Pending<T>>, message: (id: number) => FromWorker): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    send(message(id));
  });
}

function settle<T>(pending: Map<number, Pending<T>>, id: number, value: T | undefined, error: string | undefined): void {
  const waiting = pending.get(id);
  if (waiting === undefined) return;
  pending.delete(id);
  if (error !== undefined || value === undefined) waiting.reject(new Error(error ?? 'no answer'));
  else waiting.resolve(value);
}

function flush(): void {
  if (batch.length === 0) return;
  send({ t: 'observed', batch });
  batch = [];
}

async function listen(listener: ListenerSpec): Promise<void> {
  if (router === null) return;
  try {
    const address = listener.kind === 'http' ? await router.listen(listener.port, listener.host) : await router.listenTls(listener.port, listener.host);
    send({ t: 'listening', kind: listener.kind, port: address.port });
  } catch (error) {
    send({ t: 'listening', kind: listener.kind, error: error instanceof Error ? error.message : String(error) });
  }
}

function start(settings: WorkerSettings): void {
  // The controller sends the routes next (every one, when it could list them), then the listeners.
  routes = new RouteCache({ resolve: (host, fresh) => ask(routeLookups, (id) => ({ t: 'resolve', id, host, fresh: fresh === true })) }, { refreshMs: 0 });
  router = new AppRouter({
    routes,
    ...(settings.hasCertificates ? { certificates: { find: (name: string) => ask(certificateLookups, (id) => ({ t: 'find', id, name })) } } : {}),
    ...(settings.hasChallenges === true ? { challenges: { answer: (host: string, token: string) => ask(challengeLookups, (id) => ({ t: 'challenge', id, host, token })) } } : {}),
    ...(settings.httpsPort === undefined ? {} : { httpsPort: settings.httpsPort }),
    logger: jsonLogger(settings.logLevel, settings.id),
    // The access log is written at `info`: above that level its lines are not even made.
    ...(LEVELS[settings.logLevel] > LEVELS.info ? { accessLog: false } : {}),
    ...(settings.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: settings.connectTimeoutMs }),
    ...(settings.certificateCache === undefined ? {} : { certificateCache: settings.certificateCache }),
    ...(settings.accessLogSample === undefined ? {} : { accessLogSample: settings.accessLogSample }),
    ...(settings.limits === undefined ? {} : { limits: settings.limits }),
    ...(settings.upstream === undefined ? {} : { upstream: settings.upstream }),
    ...(settings.observe ? { observer: { request: (app: string | null, status: number, durationMs: number) => void batch.push([app, status, durationMs]) } } : {}),
  });
  if (settings.observe) {
    flusher = setInterval(flush, 1000);
    flusher.unref();
  }
}

async function close(timeoutMs: number): Promise<void> {
  if (closing) return;
  closing = true;
  if (flusher !== null) clearInterval(flusher);
  await router?.close(timeoutMs);
  flush();
  send({ t: 'closed' });
  process.exit(0);
}

process.on('message', (message: ToWorker) => {
  switch (message.t) {
    case 'start':
      start(message.settings);
      break;
    case 'listen':
      void listen(message.listener);
      break;
    case 'routes':
      routes?.apply(message.entries, message.listed === true);
      break;
    case 'resolved':
      settle(routeLookups, message.id, message.route, message.error);
      break;
    case 'found':
      settle(certificateLookups, message.id, message.certificate, message.error);
      break;
    case 'answered':
      settle(challengeLookups, message.id, message.answer, message.error);
      break;
    case 'invalidate':
      router?.invalidateCertificate(message.name);
      break;
    case 'sync':
      // Messages arrive in order: every route sent before this one is applied.
      send({ t: 'synced', id: message.id });
      break;
    case 'close':
      void close(message.timeoutMs);
      break;
  }
});
// The controller is gone (stopped, crashed or killed): no worker outlives it.
process.on('disconnect', () => {
  if (closing) return;
  closing = true;
  process.exit(0);
});
// Signals sent to the whole process group (Ctrl-C) are the controller's to act on: it closes the workers in order.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);
