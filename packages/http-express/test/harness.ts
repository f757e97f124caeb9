import type { Application } from 'express';
import request from 'supertest';
import { DEFAULT_SETTINGS, createUseCases, type ApiVersion, type CoreDependencies, type Settings, type UseCases } from '@svc/core';
import {
  FakeCertificateParser,
  FakePasswordHasher,
  FakePublicKeyParser,
  FakeScheduler,
  FakeSecretBox,
  FakeTokenGenerator,
  InMemoryLogStore,
  InMemoryUnitOfWork,
  ManualClock,
  SeededRandom,
  SequentialIdGenerator,
} from '@svc/core/testing';
import { createHttpApp, type HttpLogger, type HttpOptions } from '../src';

/** A logger that keeps what it was given, for assertions. */
export class RecordingLogger implements HttpLogger {
  readonly entries: Array<{ level: 'info' | 'warn' | 'error'; obj: object; msg: string }> = [];
  info(obj: object, msg: string): void {
    this.entries.push({ level: 'info', obj, msg });
  }
  warn(obj: object, msg: string): void {
    this.entries.push({ level: 'warn', obj, msg });
  }
  error(obj: object, msg: string): void {
    this.entries.push({ level: 'error', obj, msg });
  }
  at(level: 'info' | 'warn' | 'error'): Array<{ obj: object; msg: string }> {
    return this.entries.filter((e) => e.level === level);
  }
}

/** The fakes behind one application under test. */
export interface Harness {
  app: Application;
  scheduler: FakeScheduler;
  clock: ManualClock;
  logs: InMemoryLogStore;
  uow: InMemoryUnitOfWork;
  logger: RecordingLogger;
  useCases: UseCases;
}

/** How a test wants its application: operator settings, default version, probes and replaced use cases. */
export interface HarnessOptions {
  settings?: Partial<Settings>;
  defaultVersion?: ApiVersion;
  ready?: () => Promise<boolean>;
  trustProxy?: boolean;
  /** Replaces some use cases, e.g. with one that fails unexpectedly. */
  override?: (useCases: UseCases) => Partial<UseCases>;
  followBufferBytes?: number;
  shutdown?: AbortSignal;
  /** Default none, as in production. */
  corsAllowedOrigins?: string[];
  /** Default `.example.com`, the host names the tests use. */
  allowedHosts?: string[];
  requestObserver?: HttpOptions['requestObserver'];
  metrics?: HttpOptions['metrics'];
  dashboardDirectory?: string;
  platform?: HttpOptions['platform'];
}

/** The platform version the test application announces. */
export const PLATFORM_VERSION = '0.1.0';
/** The platform domain of the test application's app URLs. */
export const PLATFORM_DOMAIN = 'svc.test';

/** An application wired to in-memory fakes, as the core's own tests use them. */
export function harness(options: HarnessOptions = {}): Harness {
  const scheduler = new FakeScheduler();
  const clock = new ManualClock();
  const logs = new InMemoryLogStore();
  const uow = new InMemoryUnitOfWork();
  const deps: CoreDependencies = {
    uow,
    scheduler,
    logs,
    keyParser: new FakePublicKeyParser(),
    certificateParser: new FakeCertificateParser(),
    passwords: new FakePasswordHasher(),
    tokens: new FakeTokenGenerator(),
    secrets: new FakeSecretBox(),
    clock,
    timer: clock,
    ids: new SequentialIdGenerator(),
    random: new SeededRandom(),
    settings: { ...DEFAULT_SETTINGS, platformDomain: PLATFORM_DOMAIN, ...options.settings },
  };
  const base = createUseCases(deps);
  const useCases = { ...base, ...(options.override?.(base) ?? {}) } as UseCases;
  const logger = new RecordingLogger();
  const app = createHttpApp({
    useCases,
    defaultVersion: options.defaultVersion ?? '1.7',
    platformVersion: PLATFORM_VERSION,
    platformDomain: PLATFORM_DOMAIN,
    ready: options.ready,
    logger,
    trustProxy: options.trustProxy,
    followBufferBytes: options.followBufferBytes,
    shutdown: options.shutdown,
    corsAllowedOrigins: options.corsAllowedOrigins,
    ...(options.dashboardDirectory === undefined ? {} : { dashboardDirectory: options.dashboardDirectory }),
    allowedHosts: options.allowedHosts ?? ['.example.com'],
    requestObserver: options.requestObserver,
    metrics: options.metrics,
    ...(options.platform === undefined ? {} : { platform: options.platform }),
  });
  return { app, scheduler, clock, logs, uow, logger, useCases };
}

/** Registers a user and logs in; returns the token. The first user becomes administrator. */
export async function signUp(app: Application, username: string, password = 'pw-' + username): Promise<string> {
  await request(app)
    .post('/v1/auth/register')
    .send({ username, password, email: `${username}@example.com` })
    .expect(201);
  const login = await request(app).post('/v1/auth/login').send({ username, password }).expect(200);
  return (login.body as { token: string }).token;
}

/** The Authorization header value for a token. */
export const auth = (token: string): string => `token ${token}`;

/** Creates an app and returns its id. */
export async function createApp(app: Application, token: string, id: string): Promise<string> {
  await request(app).post('/v1/apps').set('Authorization', auth(token)).send({ id }).expect(201);
  return id;
}

/** Deploys an image build with a procfile (so scaling and runs work); returns the response. */
export async function deploy(app: Application, token: string, id: string, procfile: Record<string, string> = { web: 'serve' }) {
  return request(app)
    .post(`/v1/apps/${id}/builds`)
    .set('Authorization', auth(token))
    .send({ image: 'registry.example.com/web:1', procfile })
    .expect(201);
}

/** An administrator (`root`) and a regular user (`alice`) with their tokens. */
export async function adminAndAlice(app: Application): Promise<{ root: string; alice: string }> {
  const root = await signUp(app, 'root');
  const alice = await signUp(app, 'alice');
  return { root, alice };
}
