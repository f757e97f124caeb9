import 'reflect-metadata';
import { Container, ContainerModule } from 'inversify';
import type { Application } from 'express';
import {
  TOKENS,
  EscapingLogStore,
  type ApiVersion,
  USE_CASES,
  type CoreDependencies,
  type BuildpackCatalog,
  type ImageBuilder,
  type LogStore,
  type SourceCompiler,
  type SecretBox,
  type Settings,
  type TlsStore,
  type Timer,
  type AcmeSetup,
  type UnitOfWork,
  type UseCases,
} from '@svc/core';
import { AesGcmSecretBox, CryptoRandomSource, RandomIdGenerator, RandomTokenGenerator, ScryptPasswordHasher, SystemClock, SystemTimer, installationId } from '@svc/crypto-node';
import { Ssh2PublicKeyParser } from '@svc/ssh-keys-ssh2';
import { ForgeCertificateParser } from '@svc/certs-forge';
import { FileLogStore } from '@svc/logs-file';
import type { ProcessScheduler } from '@svc/scheduler-process';
import { DockerImageBuilder, type Docker, type RegistryLogin } from '@svc/scheduler-docker';
import { createHttpApp, type HttpLogger, type HttpOptions, type PlatformAddresses } from '@svc/http-express';
import { GitServer } from '@svc/builder-git';
import { AppRouter, RouterCluster, RouterLink, type AppRouterOptions, type LogLevel, type RequestObserver } from '@svc/router-http';
import type { ControllerMetrics } from '@svc/metrics-prometheus';
import type { ImageBuildSettings } from './config';
import { PlatformRouteTable, StoredCertificates, StoredChallenges, type LeavingContainers } from './routing';
import { SCHEDULER_TOKENS, boundSchedulers, schedulerEndpoints, schedulerModule, type BoundSchedulers, type SchedulerSetup } from './schedulers';
export type { DockerSchedulerSetup, ProcessSchedulerSetup } from './schedulers';
import { buildsModule, type BuildpackSetup, type CompilerKind, type DockerCompileSetup } from './compose-builds';
import type { EventPorts } from './events';
import { boundBuildSlots, boundRunSlots, persistenceModule, type DatabaseHandle } from './persistence';

/** Any use case class: constructed from the core's dependencies. */
type UseCaseClass = new (deps: CoreDependencies) => object;

/** Tokens of the server's own pieces. */
export const SERVER_TOKENS = Object.freeze({
  HttpApp: Symbol.for('svc.HttpApp'),
  GitServer: Symbol.for('svc.GitServer'),
  /** The schedulers, the Docker Engine client and the containers leaving the routes (schedulers.ts). */
  ...SCHEDULER_TOKENS,
  Router: Symbol.for('svc.Router'),
  RouteTable: Symbol.for('svc.RouteTable'),
  /** The timers the core waits and repeats with (deploy leases). */
  Timer: Symbol.for('svc.Timer'),
});

export type { DatabaseHandle };

/** What the composition root needs to know, already validated; the scheduler's part is `SchedulerSetup` (schedulers.ts). */
export interface CompositionOptions extends SchedulerSetup {
  database: DatabaseHandle;
  secretKey: string;
  /** scrypt's cost N for new password hashes (PASSWORD_SCRYPT_N); absent: the hasher's default, 16384. */
  passwordScryptN?: number;
  logDirectory: string;
  /** Where app logs go instead of files in `logDirectory` (with a shared database: the database). */
  logStore?: LogStore;
  settings: Settings;
  apiVersion: ApiVersion;
  platformVersion: string;
  trustProxy: boolean;
  /** Origins whose pages may call the API; absent: none. */
  corsAllowedOrigins?: readonly string[];
  /** Host names the API answers besides IP addresses, localhost and the platform domain. */
  allowedHosts?: readonly string[];
  /** The dashboard's built files, served at `/dashboard/`; absent or null: no dashboard. */
  dashboardDirectory?: string | null;
  /** Where the apps and the git server are reached (`GET /v1/platform`), read at each request; absent: not known. */
  platform?: () => PlatformAddresses;
  logger: HttpLogger;
  /** How pushed commits are built into images; absent or null: they run from their checkout. */
  imageBuilds?: ImageBuildSettings | null;
  /** How pushed commits without a Dockerfile are compiled with buildpacks; absent or null: they run as pushed. */
  buildpacks?: BuildpackSetup | null;
  /** The registry's login (REGISTRY_USERNAME, REGISTRY_PASSWORD): image pushes, pulls and Swarm services of its images carry it; absent or null: none. */
  registryLogin?: RegistryLogin | null;
  /** The git server (git push deploys); absent or null: none. */
  git?: GitSetup | null;
  /** When aborted, log follow streams end (a graceful stop need not wait for them). */
  shutdown?: AbortSignal;
  /** Fields added to the `GET /readyz` answer (how apps are confined, when it matters). */
  readyDetails?: () => Record<string, string | string[]>;
  /** Metrics: told about requests and deploys, and served at `GET /metrics`; absent or null: none. */
  metrics?: { collector: ControllerMetrics; token: string | null } | null;
  /** How the router runs; absent: in-process with its defaults. */
  router?: RouterSetup;
  /** The TLS state of names and the apps' HTTPS settings (the database's); absent or null: none. */
  tls?: TlsStore | null;
  /** Automatic HTTPS over ACME; absent or null: off. */
  acme?: AcmeSetup | null;
  /** The journal signal, idempotency store and webhook sender and signer; absent: events cannot be followed, keys are ignored, deliveries wait. */
  events?: EventPorts | null;
}

/** How the router runs: in worker processes or on the controller's event loop, its limits and pools. */
export interface RouterSetup {
  /** Worker processes; 0 runs the router in this process. */
  workers: number;
  routeRefreshMs?: number;
  accessLogSample?: number;
  limits?: AppRouterOptions['limits'];
  upstream?: AppRouterOptions['upstream'];
  /** The level of the workers' own log lines. */
  logLevel?: LogLevel;
  /** Hears every routed request's app, status and duration (the metrics endpoint). */
  observer?: RequestObserver;
  /** The HTTPS port redirects to HTTPS name (ROUTER_TLS_PORT); absent: 443. */
  httpsPort?: number;
  /** The control socket of a router process of its own (ROUTER_SOCKET): the controller serves it instead of running one; absent or null: it runs its own. */
  socket?: string | null;
}

/**
 * The router as the server drives it: in-process (AppRouter), in worker processes
 * (RouterCluster), or a router process of its own that the controller serves (RouterLink,
 * which the server tells when the apps are up with `serve`).
 */
export type PlatformRouter = Pick<AppRouter, 'listen' | 'listenTls' | 'invalidateCertificate' | 'routesChanged' | 'close'> & { serve?: () => Promise<void> };

/** Where the git server keeps repositories and build directories, and how it introduces itself. */
export interface GitSetup {
  /** Bare repositories, `<repositories>/<app>.git`. */
  repositories: string;
  /** Build directories, `<builds>/<app>/<sha>`. */
  builds: string;
  /** The SSH host private key. */
  hostKey: string;
  /** The address of a deployed app, shown to the pusher. */
  appUrl: (appId: string) => string | null;
  /** Time from connecting to being authenticated, in ms. */
  authTimeoutMs?: number;
  /** Open connections in all, and from one client address. */
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  /** The last places of `maxConnections`, for clients holding no connection yet. */
  reservedConnections?: number;
}

const gitModule = (git: GitSetup | null, logger: HttpLogger) =>
  new ContainerModule(({ bind }) => {
    bind<GitServer>(SERVER_TOKENS.GitServer).toDynamicValue((ctx) => {
      if (git === null) throw new Error('The git server needs its setup (CompositionOptions.git)');
      return new GitServer({ useCases: ctx.get<UseCases>(TOKENS.UseCases), ...git, logger });
    });
  });


const cryptoModule = (secretKey: string, scryptN: number | undefined) =>
  new ContainerModule(({ bind }) => {
    bind(TOKENS.PasswordHasher).toDynamicValue(() => new ScryptPasswordHasher(scryptN === undefined ? {} : { N: scryptN }));
    bind(TOKENS.TokenGenerator).toDynamicValue(() => new RandomTokenGenerator());
    bind(TOKENS.SecretBox).toDynamicValue(() => new AesGcmSecretBox(secretKey));
    bind(TOKENS.Clock).toDynamicValue(() => new SystemClock());
    bind<Timer>(SERVER_TOKENS.Timer).toDynamicValue(() => new SystemTimer());
    bind(TOKENS.IdGenerator).toDynamicValue(() => new RandomIdGenerator());
    bind(TOKENS.RandomSource).toDynamicValue(() => new CryptoRandomSource());
  });

const parsersModule = new ContainerModule(({ bind }) => {
  bind(TOKENS.PublicKeyParser).toDynamicValue(() => new Ssh2PublicKeyParser());
  bind(TOKENS.CertificateParser).toDynamicValue(() => new ForgeCertificateParser());
});

const logsModule = (directory: string, store: LogStore | undefined) =>
  new ContainerModule(({ bind }) => {
    // Control characters are escaped on the way in, whoever writes: app output, builds, platform lines.
    bind<LogStore>(TOKENS.LogStore).toDynamicValue(() => new EscapingLogStore(store ?? new FileLogStore(directory)));
  });

/** The image builder of git pushes, when image builds are on; otherwise null, and pushed commits run from their checkout. */
const imagesModule = (builds: ImageBuildSettings | null, registryLogin: RegistryLogin | null, registryAllow: readonly string[]) =>
  new ContainerModule(({ bind }) => {
    bind<ImageBuilder | null>(TOKENS.ImageBuilder).toDynamicValue((ctx) =>
      builds === null
        ? null
        : new DockerImageBuilder(ctx.get<Docker>(SERVER_TOKENS.DockerEngine), {
            stackImage: builds.stackImage,
            timeoutMs: builds.timeoutMs,
            memoryBytes: builds.memoryBytes,
            cpuShares: builds.cpuShares,
            contextLimitBytes: builds.contextLimitBytes,
            network: builds.network,
            registry: builds.registry,
            registryLogin,
            registryAllow,
            imageLimitBytes: builds.imageLimitBytes,
            pidsLimit: builds.pidsLimit,
          }),
    );
  });

const coreModule = (settings: Settings, metrics: ControllerMetrics | undefined, tls: TlsStore | null, acme: AcmeSetup | null, events: EventPorts | null) =>
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
      timer: ctx.get<Timer>(SERVER_TOKENS.Timer),
      ids: ctx.get(TOKENS.IdGenerator),
      random: ctx.get(TOKENS.RandomSource),
      settings: ctx.get(TOKENS.Settings),
      images: ctx.get<ImageBuilder | null>(TOKENS.ImageBuilder),
      compiler: ctx.get<SourceCompiler | null>(TOKENS.SourceCompiler),
      buildpacks: ctx.get<BuildpackCatalog | null>(TOKENS.BuildpackCatalog),
      buildSlots: boundBuildSlots(ctx),
      runSlots: boundRunSlots(ctx),
      deployObserver: metrics,
      tls,
      acme,
      ...(events ?? {}),
      deliveryObserver: metrics,
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

/** The HTTP edge's side of the metrics: every request observed, `GET /metrics` served. */
function httpMetrics(metrics: ControllerMetrics, token: string | null): Pick<HttpOptions, 'requestObserver' | 'metrics'> {
  return {
    requestObserver: (sample) => metrics.observeRequest(sample),
    metrics: { token, scrape: async () => ({ contentType: metrics.contentType, body: await metrics.render() }) },
  };
}

const httpModule = (options: CompositionOptions) =>
  new ContainerModule(({ bind }) => {
    bind<Application>(SERVER_TOKENS.HttpApp).toDynamicValue((ctx) =>
      createHttpApp({
        useCases: ctx.get<UseCases>(TOKENS.UseCases),
        defaultVersion: options.apiVersion,
        platformVersion: options.platformVersion,
        platformDomain: options.settings.platformDomain,
        ready: () => options.database.ping(),
        readyDetails: options.readyDetails,
        logger: options.logger,
        trustProxy: options.trustProxy,
        corsAllowedOrigins: options.corsAllowedOrigins,
        allowedHosts: options.allowedHosts,
        ...(options.dashboardDirectory ? { dashboardDirectory: options.dashboardDirectory } : {}),
        ...(options.platform ? { platform: options.platform } : {}),
        shutdown: options.shutdown,
        ...(options.metrics ? httpMetrics(options.metrics.collector, options.metrics.token) : {}),
      }),
    );
  });

/**
 * The router sends app traffic to the web containers the process, Docker or Swarm scheduler runs;
 * with the memory scheduler every app answers 503. It runs in worker processes unless
 * `workers` is 0.
 */
const routerModule = (options: CompositionOptions) =>
  new ContainerModule(({ bind }) => {
    bind<PlatformRouteTable>(SERVER_TOKENS.RouteTable).toDynamicValue((ctx) => {
      const endpoints = schedulerEndpoints(options.scheduler, ctx);
      const tls = options.tls;
      const redirects = tls ? { redirects: ctx.get<UseCases>(TOKENS.UseCases).httpsRedirectFor, redirectingApps: () => tls.httpsRedirectApps() } : {};
      return new PlatformRouteTable(ctx.get<UnitOfWork>(TOKENS.UnitOfWork), options.settings.platformDomain, endpoints, redirects, ctx.get<LeavingContainers>(SERVER_TOKENS.LeavingContainers));
    });
    bind<PlatformRouter>(SERVER_TOKENS.Router).toDynamicValue((ctx) => {
      const setup = options.router ?? { workers: 0 };
      const shared = {
        routes: ctx.get<PlatformRouteTable>(SERVER_TOKENS.RouteTable),
        certificates: new StoredCertificates(
          ctx.get<UseCases>(TOKENS.UseCases).certificateForServerName,
          ctx.get<SecretBox>(TOKENS.SecretBox),
          options.tls ? ctx.get<UseCases>(TOKENS.UseCases).issuedCertificateFor : null,
        ),
        // The ACME server validates names on the router's plain HTTP listener (HTTP-01).
        ...(options.tls && options.acme ? { challenges: new StoredChallenges(options.tls) } : {}),
        ...(setup.httpsPort === undefined ? {} : { httpsPort: setup.httpsPort }),
        logger: options.logger,
        ...(setup.routeRefreshMs === undefined ? {} : { routeRefreshMs: setup.routeRefreshMs }),
        ...(setup.accessLogSample === undefined ? {} : { accessLogSample: setup.accessLogSample }),
        ...(setup.limits === undefined ? {} : { limits: setup.limits }),
        ...(setup.upstream === undefined ? {} : { upstream: setup.upstream }),
        ...(setup.observer === undefined ? {} : { observer: setup.observer }),
      };
      const router: PlatformRouter =
        typeof setup.socket === 'string'
          ? new RouterLink({ path: setup.socket, routes: shared.routes, certificates: shared.certificates, logger: shared.logger, ...(shared.challenges === undefined ? {} : { challenges: shared.challenges }), ...(setup.observer === undefined ? {} : { observer: setup.observer }) })
          : setup.workers === 0
            ? new AppRouter(shared)
            : new RouterCluster({ ...shared, workers: setup.workers, ...(setup.logLevel === undefined ? {} : { logLevel: setup.logLevel }) });
      ctx.get<LeavingContainers>(SERVER_TOKENS.LeavingContainers).refreshRoutes = () => router.routesChanged();
      return router;
    });
  });

/** Where buildpack builds run: the process sandbox with SCHEDULER=process, the engine when images are built, else nowhere. */
function compilerKind(options: CompositionOptions): CompilerKind {
  if (options.scheduler === 'process') return 'process';
  return options.imageBuilds ? 'docker' : 'none';
}

function dockerCompileSetup(options: CompositionOptions, engine: () => Docker): DockerCompileSetup | null {
  if (options.scheduler === 'process' || !options.imageBuilds) return null;
  return { engine, dockerHost: options.docker?.host ?? null, images: options.imageBuilds, registryLogin: options.registryLogin ?? null };
}

/**
 * The composition root: binds every port to its adapter and builds the HTTP application.
 * The only place that knows the dependency-injection container.
 */
export function compose(options: CompositionOptions): BoundSchedulers & {
  container: Container;
  app: Application;
  useCases: UseCases;
  /** The git server, not yet listening, when `git` is given. */
  gitServer: GitServer | null;
  /** The router of app traffic, not yet listening. */
  router: PlatformRouter;
  /** What compiles pushes with buildpacks, and how (for its start-up); null when nothing does. */
  builds: { compiler: SourceCompiler | null; docker: DockerCompileSetup | null };
  /** Where the router's routes come from; `forget()` it when routes changed. */
  routeTable: PlatformRouteTable;
  /** The ports the use cases were built from (background work such as certificate renewal). */
  deps: CoreDependencies;
} {
  const container = new Container({ defaultScope: 'Singleton' });
  container.loadSync(
    persistenceModule(options.database),
    cryptoModule(options.secretKey, options.passwordScryptN),
    parsersModule,
    logsModule(options.logDirectory, options.logStore),
    // Engine objects carry the installation's fingerprint (from SECRET_KEY, shared by all its processes): see schedulers.ts.
    schedulerModule({ ...options, installation: options.installation ?? installationId(options.secretKey) }, options.registryLogin ?? null),
    // The process scheduler runs checkouts: pushed commits are built into images for the others.
    imagesModule(options.scheduler === 'process' ? null : (options.imageBuilds ?? null), options.registryLogin ?? null, options.docker?.registryAllow ?? []),
    // Buildpacks compile where the app's code runs: in the process sandbox, or on the engine with image builds.
    buildsModule(options.buildpacks ?? null, compilerKind(options), () => container.get<ProcessScheduler>(SERVER_TOKENS.ProcessScheduler), dockerCompileSetup(options, () => container.get<Docker>(SERVER_TOKENS.DockerEngine))),
    coreModule(options.settings, options.metrics?.collector, options.tls ?? null, options.acme ?? null, options.events ?? null),
    httpModule(options),
    gitModule(options.git ?? null, options.logger),
    routerModule(options),
  );
  return {
    container,
    app: container.get<Application>(SERVER_TOKENS.HttpApp),
    ...boundSchedulers(container, options.scheduler),
    useCases: container.get<UseCases>(TOKENS.UseCases),
    gitServer: options.git ? container.get<GitServer>(SERVER_TOKENS.GitServer) : null,
    router: container.get<PlatformRouter>(SERVER_TOKENS.Router),
    builds: { compiler: container.get<SourceCompiler | null>(TOKENS.SourceCompiler), docker: dockerCompileSetup(options, () => container.get<Docker>(SERVER_TOKENS.DockerEngine)) },
    routeTable: container.get<PlatformRouteTable>(SERVER_TOKENS.RouteTable),
    deps: container.get<CoreDependencies>(TOKENS.CoreDependencies),
  };
}
