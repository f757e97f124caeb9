import 'reflect-metadata';
import { Container, ContainerModule } from 'inversify';
import type { Application } from 'express';
import {
  TOKENS,
  type ApiVersion,
  USE_CASES,
  type CoreDependencies,
  type LogStore,
  type Scheduler,
  type Settings,
  type UnitOfWork,
  type UseCases,
} from '@svc/core';
import { AesGcmSecretBox, CryptoRandomSource, RandomIdGenerator, RandomTokenGenerator, ScryptPasswordHasher, SystemClock } from '@svc/crypto-node';
import { Ssh2PublicKeyParser } from '@svc/ssh-keys-ssh2';
import { ForgeCertificateParser } from '@svc/certs-forge';
import { FileLogStore } from '@svc/logs-file';
import { MemoryScheduler } from '@svc/scheduler-memory';
import { createHttpApp, type HttpLogger } from '@svc/http-express';
import type { SchedulerKind } from './config';

/** Any use case class: constructed from the core's dependencies. */
type UseCaseClass = new (deps: CoreDependencies) => object;

/** Tokens of the server's own pieces. */
export const SERVER_TOKENS = Object.freeze({
  HttpApp: Symbol.for('svc.HttpApp'),
});

/** The database as the composition root sees it. */
export interface DatabaseHandle {
  uow: UnitOfWork;
  ping(): Promise<boolean>;
}

/** What the composition root needs to know, already validated. */
export interface CompositionOptions {
  database: DatabaseHandle;
  secretKey: string;
  logDirectory: string;
  /** Where app logs go instead of files in `logDirectory` (with a shared database: the database). */
  logStore?: LogStore;
  scheduler: SchedulerKind;
  settings: Settings;
  apiVersion: ApiVersion;
  platformVersion: string;
  trustProxy: boolean;
  logger: HttpLogger;
}

const persistenceModule = (database: DatabaseHandle) =>
  new ContainerModule(({ bind }) => {
    bind<UnitOfWork>(TOKENS.UnitOfWork).toConstantValue(database.uow);
  });

const cryptoModule = (secretKey: string) =>
  new ContainerModule(({ bind }) => {
    bind(TOKENS.PasswordHasher).toDynamicValue(() => new ScryptPasswordHasher());
    bind(TOKENS.TokenGenerator).toDynamicValue(() => new RandomTokenGenerator());
    bind(TOKENS.SecretBox).toDynamicValue(() => new AesGcmSecretBox(secretKey));
    bind(TOKENS.Clock).toDynamicValue(() => new SystemClock());
    bind(TOKENS.IdGenerator).toDynamicValue(() => new RandomIdGenerator());
    bind(TOKENS.RandomSource).toDynamicValue(() => new CryptoRandomSource());
  });

const parsersModule = new ContainerModule(({ bind }) => {
  bind(TOKENS.PublicKeyParser).toDynamicValue(() => new Ssh2PublicKeyParser());
  bind(TOKENS.CertificateParser).toDynamicValue(() => new ForgeCertificateParser());
});

const logsModule = (directory: string, store: LogStore | undefined) =>
  new ContainerModule(({ bind }) => {
    bind<LogStore>(TOKENS.LogStore).toDynamicValue(() => store ?? new FileLogStore(directory));
  });

const schedulerModule = (kind: SchedulerKind) =>
  new ContainerModule(({ bind }) => {
    bind<Scheduler>(TOKENS.Scheduler).toDynamicValue((): Scheduler => {
      switch (kind) {
        case 'memory':
          return new MemoryScheduler();
      }
    });
  });

const coreModule = (settings: Settings) =>
  new ContainerModule(({ bind }) => {
    bind<Settings>(TOKENS.Settings).toConstantValue(settings);
    bind<CoreDependencies>(TOKENS.CoreDependencies).toDynamicValue((ctx) => ({
      uow: ctx.get(TOKENS.UnitOfWork),
      scheduler: ctx.get(TOKENS.Scheduler),
      logs: ctx.get(TOKENS.LogStore),
      keyParser: ctx.get(TOKENS.PublicKeyParser),
      certificateParser: ctx.get(TOKENS.CertificateParser),
      passwords: ctx.get(TOKENS.PasswordHasher),
      tokens: ctx.get(TOKENS.TokenGenerator),
      secrets: ctx.get(TOKENS.SecretBox),
      clock: ctx.get(TOKENS.Clock),
      ids: ctx.get(TOKENS.IdGenerator),
      random: ctx.get(TOKENS.RandomSource),
      settings: ctx.get(TOKENS.Settings),
    }));
    // Each use case class is its own binding, built by a factory: the core needs no decorators.
    const classes = Object.entries(USE_CASES) as [string, UseCaseClass][];
    for (const [, UseCase] of classes) {
      bind<object>(UseCase).toDynamicValue((ctx) => new UseCase(ctx.get<CoreDependencies>(TOKENS.CoreDependencies)));
    }
    bind<UseCases>(TOKENS.UseCases).toDynamicValue(
      (ctx) => Object.freeze(Object.fromEntries(classes.map(([name, UseCase]) => [name, ctx.get<object>(UseCase)]))) as unknown as UseCases,
    );
  });

const httpModule = (options: CompositionOptions) =>
  new ContainerModule(({ bind }) => {
    bind<Application>(SERVER_TOKENS.HttpApp).toDynamicValue((ctx) =>
      createHttpApp({
        useCases: ctx.get<UseCases>(TOKENS.UseCases),
        defaultVersion: options.apiVersion,
        platformVersion: options.platformVersion,
        platformDomain: options.settings.platformDomain,
        ready: () => options.database.ping(),
        logger: options.logger,
        trustProxy: options.trustProxy,
      }),
    );
  });

/**
 * The composition root: binds every port to its adapter and builds the HTTP application.
 * The only place that knows the dependency-injection container.
 */
export function compose(options: CompositionOptions): { container: Container; app: Application; scheduler: Scheduler } {
  const container = new Container({ defaultScope: 'Singleton' });
  container.loadSync(
    persistenceModule(options.database),
    cryptoModule(options.secretKey),
    parsersModule,
    logsModule(options.logDirectory, options.logStore),
    schedulerModule(options.scheduler),
    coreModule(options.settings),
    httpModule(options),
  );
  return {
    container,
    app: container.get<Application>(SERVER_TOKENS.HttpApp),
    scheduler: container.get<Scheduler>(TOKENS.Scheduler),
  };
}
