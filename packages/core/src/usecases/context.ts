import { AppNotVisible, Forbidden, NotFound } from '../errors';
import type { App, LogEntry, User } from '../model/entities';
import { escapeLogEntry } from '../model/log-escape';
import type { Repositories, UnitOfWork } from '../ports/repositories';
import { assertPageExists, sliceOf, type Page, type PageRequest, type Slice } from '../model/pagination';
import type {
  CertificateParser,
  Clock,
  IdGenerator,
  ImageBuilder,
  LogStore,
  PasswordHasher,
  PublicKeyParser,
  RandomSource,
  Scheduler,
  SecretBox,
  Timer,
  TokenGenerator,
} from '../ports/services';
import type { DeployObserver } from '../ports/observers';
import type { DeliveryObserver, IdempotencyStore, JournalSignal, WebhookSender, WebhookSigner } from '../ports/events';
import type { BuildpackCatalog, SourceCompiler } from '../ports/builds';
import type { BuildSlotStore } from '../ports/build-slots';
import type { CertificateAuthority, TlsStore } from '../ports/acme';
import type { AcmeSettings } from '../rules/acme';
import { canAdministerApp, canSeeApp, isAdmin } from '../rules/apps';
import type { Quotas } from '../rules/quotas';

/** Who may register: anyone, nobody, or administrators on behalf of others. */
export type RegistrationMode = 'enabled' | 'disabled' | 'admin_only';

/** Operator settings the domain rules depend on. */
export interface Settings {
  platformDomain: string;
  reservedAppNames: readonly string[];
  registrationMode: RegistrationMode;
  /** Token lifetime; null means tokens do not expire. */
  tokenTtlSeconds: number | null;
  scaleMaxPerType: number;
  runTimeoutSeconds: number;
  runOutputLimitBytes: number;
  /** Failed logins one client address may make for one username before it must wait between attempts. */
  loginFailureLimit: number;
  /** How long a failed login counts. */
  loginFailureWindowSeconds: number;
  /** The first wait once the limit is reached; it doubles with each further failure. */
  loginBackoffSeconds: number;
  /** The longest wait (at most the window). */
  loginBackoffMaxSeconds: number;
  /**
   * Failed logins for one username from all addresses together past which every address
   * waits from its own first failure (a fresh address still gets its first attempt).
   */
  loginUsernameFailureLimit: number;
  /** Log streams (`follow`) one user may hold open at once. */
  logFollowersPerUser: number;
  /** Log streams this controller process holds open at once, all users together. */
  logFollowersTotal: number;
  quotas: Quotas;
  /** Builds (Dockerfile, Procfile or buildpack) one user may run at once in this process (`QUOTA_BUILDS_PER_USER`); more are refused 429. */
  buildsPerUser: number;
  /**
   * One-off processes (`run`s and release phases) the apps of one owner may run at once, over
   * every controller process on the database (`QUOTA_RUNS_PER_USER`); more are refused 429
   * `RUN.TOO_MANY`. Absent: `DEFAULT_RUNS_PER_USER`.
   */
  runsPerUser?: number;
  /** How many of an app's most recently released builds keep their source, so that they can be rolled back to. */
  buildRetention: number;
  /**
   * How long a deploy's lease on its app lasts without being renewed (the holder renews it
   * three times per period while it works): a controller process that dies mid-deploy
   * leaves its app locked for at most this long before another takes over and cleans up.
   */
  deployLeaseSeconds: number;
  /**
   * The git URLs an app's `BUILDPACK_URL` may name: exact URLs, or prefixes ending in `/`.
   * Empty: no URL is ever fetched, only installed buildpacks are used.
   */
  buildpackUrlAllow: readonly string[];
  /** The longest a release phase (the build's `release` process type, run once per release) may run before the release fails. */
  releasePhaseTimeoutSeconds: number;
  /** How long the audit journal keeps events. */
  eventRetentionDays: number;
  /** How long a failing webhook delivery is retried before it is given up. */
  webhookRetryHours: number;
  /** The first pause before a delivery is retried; it doubles with each failure, at most an hour. */
  webhookRetryBaseSeconds: number;
  /** Webhooks one app may have. */
  webhooksPerApp: number;
  /** Delivery attempts one controller process makes at once (`WEBHOOK_CONCURRENCY`). */
  webhookConcurrency: number;
  /** Of those, how many may go to the webhooks of one owner (`WEBHOOK_CONCURRENCY_PER_OWNER`). */
  webhookConcurrencyPerOwner: number;
  /** Failures in a row after which a webhook's receiver is paused (`WEBHOOK_PAUSE_AFTER_FAILURES`). */
  webhookPauseAfterFailures: number;
  /** How long a paused receiver gets no attempt (`WEBHOOK_PAUSE_MINUTES`). */
  webhookPauseMinutes: number;
  /** How long one attempt holds its webhook's claim: longer than the sender's timeout, so that no other process attempts it meanwhile. */
  webhookClaimSeconds: number;
  /** How long the answer to a request with an `Idempotency-Key` is kept for repeats. */
  idempotencyRetentionHours: number;
}

/** The defaults SPEC.md gives for every setting, and the platform's for the limits it adds. */
export const DEFAULT_SETTINGS: Settings = Object.freeze({
  platformDomain: 'localhost',
  // The platform's own names first, then names that look like the platform's or a mail
  // provider's own hosts (clients probe autodiscover and autoconfig for credentials): an app
  // under such a name would get the platform's look, and a certificate for it.
  reservedAppNames: Object.freeze([
    'svc', 'controller', 'api', 'www', 'router',
    'admin', 'dashboard', 'console', 'git', 'ssh', 'registry', 'status', 'metrics', 'acme', 'login', 'auth', 'static', 'cdn', 'docs', 'help', 'support',
    'mail', 'webmail', 'smtp', 'imap', 'pop', 'pop3', 'mx', 'autodiscover', 'autoconfig', 'ns', 'ns1', 'ns2', 'ftp',
  ]),
  registrationMode: 'enabled',
  tokenTtlSeconds: null,
  scaleMaxPerType: 100,
  runTimeoutSeconds: 1200,
  runOutputLimitBytes: 1024 * 1024,
  loginFailureLimit: 10,
  loginFailureWindowSeconds: 15 * 60,
  loginBackoffSeconds: 30,
  loginBackoffMaxSeconds: 15 * 60,
  loginUsernameFailureLimit: 100,
  logFollowersPerUser: 10,
  logFollowersTotal: 1000,
  quotas: Object.freeze({
    appsPerUser: 100,
    processTypesPerApp: 20,
    processesPerApp: 100,
    processesPerUser: 500,
    configBytes: 64 * 1024,
    domainsPerApp: 100,
  }),
  buildsPerUser: 2,
  runsPerUser: 5,
  buildRetention: 10,
  deployLeaseSeconds: 30,
  buildpackUrlAllow: Object.freeze([]),
  releasePhaseTimeoutSeconds: 300,
  eventRetentionDays: 90,
  webhookRetryHours: 24,
  webhookRetryBaseSeconds: 10,
  webhooksPerApp: 20,
  webhookConcurrency: 8,
  webhookConcurrencyPerOwner: 2,
  webhookPauseAfterFailures: 5,
  webhookPauseMinutes: 30,
  webhookClaimSeconds: 70,
  idempotencyRetentionHours: 24,
});

/** Every port the use cases need. Each use case takes only the ones it uses. */
export interface CoreDependencies {
  uow: UnitOfWork;
  scheduler: Scheduler;
  logs: LogStore;
  keyParser: PublicKeyParser;
  certificateParser: CertificateParser;
  passwords: PasswordHasher;
  tokens: TokenGenerator;
  secrets: SecretBox;
  clock: Clock;
  /** Waits and repeats (deploy leases); on the same time as `clock`. */
  timer: Timer;
  ids: IdGenerator;
  random: RandomSource;
  settings: Settings;
  /** Builds pushed commits into images; absent or null: pushed commits run from their checkout (the process scheduler). */
  images?: ImageBuilder | null;
  /**
   * Compiles pushed commits without a Dockerfile with buildpacks (with `buildpacks`); absent
   * or null: such commits are built as before (a Procfile on the stack image, or their checkout).
   */
  compiler?: SourceCompiler | null;
  /** The buildpacks the compiler may use; both it and `compiler` are needed for buildpack builds. */
  buildpacks?: BuildpackCatalog | null;
  /**
   * The running builds of every controller process on the database (`QUOTA_BUILDS_PER_USER`
   * holds across them); absent or null: counted in this process's memory.
   */
  buildSlots?: BuildSlotStore | null;
  /**
   * The running one-off processes (`run`s and release phases) of every controller process on
   * the database (`QUOTA_RUNS_PER_USER`), in the same shape as builds' slots; absent or null:
   * counted in this process's memory.
   */
  runSlots?: BuildSlotStore | null;
  /** Watches deploys (metrics); none when absent. */
  deployObserver?: DeployObserver;
  /** The TLS state of names and the apps' HTTPS settings; absent or null: every name shows `none`. */
  tls?: TlsStore | null;
  /** Automatic HTTPS over ACME (ACME_DIRECTORY_URL); absent or null: off. */
  acme?: AcmeSetup | null;
  /** Says when the audit journal may have grown; without one, events cannot be followed. */
  journalSignal?: JournalSignal | null;
  /** Answers to requests made with an `Idempotency-Key`; without one, the key is ignored. */
  idempotency?: IdempotencyStore | null;
  /** POSTs webhook deliveries; without one, deliveries wait. */
  webhookSender?: WebhookSender | null;
  /** Signs webhook deliveries; needed with `webhookSender`. */
  webhookSigner?: WebhookSigner | null;
  /** Watches webhook delivery attempts (metrics); none when absent. */
  deliveryObserver?: DeliveryObserver;
}

/** Hears each issuance attempt's outcome (metrics). */
export interface AcmeObserver {
  attempted(outcome: 'issued' | 'failed'): void;
}

/** What automatic HTTPS needs: the certificate authority and how to renew and retry. */
export interface AcmeSetup {
  authority: CertificateAuthority;
  settings: AcmeSettings;
  observer?: AcmeObserver;
}

/** The authenticated caller: the user and the token they presented. */
export interface Actor {
  user: User;
  tokenHash: string;
  /** The API request acting (for the audit journal and conditional writes); absent outside the API. */
  request?: RequestContext;
}

/** What the API edge knows of the request an actor makes. */
export interface RequestContext {
  /** The request id the answer carries. */
  id: string;
  /** The client address; empty when unknown. */
  address: string;
  /** The request's `If-Match` header, when it has one: writes that honour it check it under their lock. */
  ifMatch?: string;
}

/**
 * Loads an app the actor may see.
 * @throws NotFound when it does not exist; AppNotVisible when the actor may not see it.
 */
export async function loadVisibleApp(repos: Repositories, actor: Actor, appId: string, lock = false): Promise<App> {
  const app = lock ? await repos.apps.lockById(appId) : await repos.apps.findById(appId);
  if (!app) throw new NotFound('APP.NOT_FOUND');
  // The owner and administrators see it whoever the collaborators are: only others need the lookup.
  if (canAdministerApp(app, actor.user)) return app;
  if (!canSeeApp(app, actor.user, await repos.permissions.has(app.id, actor.user.username))) {
    throw new AppNotVisible();
  }
  return app;
}

/**
 * Loads an app the actor may administer (delete, transfer, manage collaborators).
 * @throws NotFound, AppNotVisible, or Forbidden for a collaborator.
 */
export async function loadAdministeredApp(repos: Repositories, actor: Actor, appId: string, lock = false): Promise<App> {
  const app = await loadVisibleApp(repos, actor, appId, lock);
  if (!canAdministerApp(app, actor.user)) {
    throw new Forbidden('Only the owner of the application or an administrator may do this.');
  }
  return app;
}

/** @throws Forbidden unless the actor is an administrator. */
export function requireAdmin(actor: Actor): void {
  if (!isAdmin(actor.user)) throw new Forbidden();
}

/** The source of lines the controller itself writes to an app's log. */
export const CONTROLLER_LOG_SOURCE = 'svc[api]';

/**
 * Writes a controller event to the app's log. The operation it reports has already been
 * committed, so a failing log store must not turn it into an error.
 */
export async function logEvent(
  deps: Pick<CoreDependencies, 'logs' | 'clock'>,
  appId: string,
  message: string,
  source = CONTROLLER_LOG_SOURCE,
): Promise<void> {
  // Platform lines quote what users typed (commands, names): they are escaped like app output.
  const entry: LogEntry = escapeLogEntry({ time: deps.clock.now(), source, message });
  try {
    await deps.logs.append(appId, [entry]);
  } catch {
    // The event is informational; the operation it describes already succeeded.
  }
}

/**
 * One page of something that belongs to an app the actor may see.
 * @throws NotFound (app, or a page past the end), AppNotVisible.
 */
export async function pageUnderApp<T>(
  repos: Repositories,
  actor: Actor,
  appId: string,
  page: PageRequest,
  list: (appId: string, slice: Slice) => Promise<Page<T>>,
): Promise<Page<T>> {
  const app = await loadVisibleApp(repos, actor, appId);
  const result = await list(app.id, sliceOf(page));
  assertPageExists(page, result.count);
  return result;
}
