import type {
  App,
  Build,
  Certificate,
  Config,
  Container,
  ContainerState,
  DeployLease,
  Domain,
  Key,
  NewCertificate,
  NewUser,
  Release,
  Token,
  User,
} from '../model/entities';
import type { Page, Slice } from '../model/pagination';
import type { DeliveryRepository, EventRepository, WebhookRepository } from './events';

/*
 * Repository ports. Implementations translate unique violations into AlreadyExists
 * (with the contract's field name) and a duplicate (app, version) release into
 * ReleaseVersionTaken; every other failure propagates as it is.
 */

/** Accounts. Lists are ordered by id. */
export interface UserRepository {
  findByUsername(username: string): Promise<User | null>;
  /**
   * Like findByUsername, and holds a write lock on the user's row until the transaction
   * ends: what is counted against the user's quotas is counted by one transaction at a time.
   */
  lockByUsername(username: string): Promise<User | null>;
  /** @throws AlreadyExists('username') */
  create(user: NewUser): Promise<User>;
  update(user: User): Promise<void>;
  /** Deletes the user with its tokens, keys, certificates, permissions and login failures. */
  delete(username: string): Promise<void>;
  list(slice: Slice): Promise<Page<User>>;
  listAdmins(slice: Slice): Promise<Page<User>>;
  /**
   * Inside a transaction, also makes concurrent transactions that count administrators take
   * turns, so that what is decided on the count (first or last administrator) stays true.
   */
  countAdmins(): Promise<number>;
}

/** API tokens, looked up by hash. */
export interface TokenRepository {
  add(token: Token): Promise<void>;
  findByHash(hash: string): Promise<Token | null>;
  /** The token with its user, read together: what authenticating a request needs. */
  findWithUser(hash: string): Promise<{ token: Token; user: User } | null>;
  deleteForUser(username: string): Promise<void>;
  /** Deletes every token of the user except the one with `keepHash`. */
  deleteForUserExcept(username: string, keepHash: string): Promise<void>;
  deleteAll(): Promise<void>;
}

/** A failed login attempt: when, and from which client address (empty when unknown). */
export interface LoginFailure {
  at: Date;
  address: string;
}

/** Failed login attempts, for throttling. */
export interface LoginFailureRepository {
  /** Records a failure of the username from a client address (default: unknown, ''). */
  record(username: string, at: Date, address?: string): Promise<void>;
  /**
   * Records a failure like `record` and returns how many failures of any username the
   * address has at or after `since`, this one included. Records of one address are counted
   * one after another, across controller processes too, so the count is exact under
   * concurrency (inside a transaction, until it ends).
   */
  recordCounting(username: string, at: Date, address: string, since: Date): Promise<number>;
  /** Times of failures at or after `since`, oldest first. */
  since(username: string, since: Date): Promise<Date[]>;
  /** Failures at or after `since` with their client addresses, oldest first. */
  recent(username: string, since: Date): Promise<LoginFailure[]>;
  /** Forgets the username's failures: those from `address` only when it is given, else all. */
  clear(username: string, address?: string): Promise<void>;
}

/** Applications. Lists are ordered by id (the name). */
export interface AppRepository {
  findById(id: string): Promise<App | null>;
  /** Like findById, and holds a write lock on the app's row until the transaction ends. */
  lockById(id: string): Promise<App | null>;
  /** @throws AlreadyExists('id') */
  create(app: App): Promise<void>;
  update(app: App): Promise<void>;
  /** Deletes the app and everything under it: configs, builds, releases, containers, domains, permissions. */
  delete(id: string): Promise<void>;
  /** Apps owned by `username` or shared with them; every app when `username` is null. */
  listVisibleTo(username: string | null, slice: Slice): Promise<Page<App>>;
  /**
   * The ids of every app in id order after `after` (from the first when null), at most
   * `limit`: the router's listing of every route, in pages that each cost as little as the
   * first (the next page starts after the last id of this one).
   */
  idsAfter(after: string | null, limit: number): Promise<string[]>;
  countOwnedBy(username: string): Promise<number>;
}

/** Configurations, immutable once written. */
export interface ConfigRepository {
  create(config: Config): Promise<void>;
  findByUuid(uuid: string): Promise<Config | null>;
}

/** Builds, immutable once written. Lists are newest first. */
export interface BuildRepository {
  create(build: Build): Promise<void>;
  findByUuid(uuid: string): Promise<Build | null>;
  listForApp(app: string, slice: Slice): Promise<Page<Build>>;
}

/** Releases. Lists are newest (highest version) first. */
export interface ReleaseRepository {
  /** @throws ReleaseVersionTaken when (app, version) exists */
  create(release: Release): Promise<void>;
  findByVersion(app: string, version: number): Promise<Release | null>;
  latest(app: string): Promise<Release | null>;
  listForApp(app: string, slice: Slice): Promise<Page<Release>>;
}

/** Which containers of an app a query covers. */
export interface ContainerFilter {
  /** Only this process type (then `run` containers are included when asked for). */
  type?: string;
  /** Include one-off `run` containers when no type is given. Default false. */
  includeRun?: boolean;
}

/** Containers. Lists are oldest first (created, then type, then num). */
export interface ContainerRepository {
  create(container: Container): Promise<void>;
  findByUuid(uuid: string): Promise<Container | null>;
  /** Every container of the app matching the filter, oldest first. */
  listForApp(app: string, filter?: ContainerFilter): Promise<Container[]>;
  pageForApp(app: string, filter: ContainerFilter, slice: Slice): Promise<Page<Container>>;
  updateState(uuid: string, state: ContainerState, updated: Date): Promise<void>;
  delete(uuid: string): Promise<void>;
}

/** Custom domains. Lists are ordered by domain. */
export interface DomainRepository {
  find(domain: string): Promise<Domain | null>;
  /** @throws AlreadyExists('domain') */
  create(domain: Domain): Promise<void>;
  delete(domain: string): Promise<void>;
  listForApp(app: string, slice: Slice): Promise<Page<Domain>>;
  /**
   * Every app's domains in domain order after `after` (from the first when null), at most
   * `limit`: the router's listing of every route, in pages that each cost as little as the first.
   */
  listAfter(after: string | null, limit: number): Promise<Domain[]>;
}

/** SSH public keys. Lists are ordered by id. */
export interface KeyRepository {
  find(owner: string, id: string): Promise<Key | null>;
  findByFingerprint(fingerprint: string): Promise<Key | null>;
  /** @throws AlreadyExists('id') for a duplicate (owner, id); AlreadyExists('public') for duplicate material */
  create(key: Key): Promise<void>;
  delete(owner: string, id: string): Promise<void>;
  listForOwner(owner: string, slice: Slice): Promise<Page<Key>>;
}

/** Collaborators of apps. */
export interface PermissionRepository {
  /** Usernames granted on the app, sorted. */
  listUsers(app: string): Promise<string[]>;
  has(app: string, username: string): Promise<boolean>;
  /** Idempotent. */
  grant(app: string, username: string): Promise<void>;
  revoke(app: string, username: string): Promise<void>;
}

/** TLS certificates. Lists are ordered by common name. */
export interface CertificateRepository {
  find(commonName: string): Promise<Certificate | null>;
  /** @throws AlreadyExists('common_name') */
  create(certificate: NewCertificate): Promise<Certificate>;
  delete(commonName: string): Promise<void>;
  /** Certificates of `owner`, or every certificate when `owner` is null. */
  list(owner: string | null, slice: Slice): Promise<Page<Certificate>>;
}

/**
 * Deploy leases: one row per app whose containers are being changed. Every method is one
 * atomic statement, so that two controller processes never both believe they hold an app.
 */
export interface DeployLeaseRepository {
  /** Inserts the lease unless the app has one already; true when inserted. */
  insert(lease: DeployLease): Promise<boolean>;
  find(app: string): Promise<DeployLease | null>;
  /** Overwrites the app's lease with `lease` if `holder` still holds it; true when written. */
  replace(holder: string, lease: DeployLease): Promise<boolean>;
  /** Deletes the app's lease if `holder` holds it; true when deleted. */
  remove(app: string, holder: string): Promise<boolean>;
  /** Every lease, oldest first. */
  list(): Promise<DeployLease[]>;
}

/** Every repository, bound to one connection or one transaction. */
export interface Repositories {
  users: UserRepository;
  tokens: TokenRepository;
  loginFailures: LoginFailureRepository;
  apps: AppRepository;
  configs: ConfigRepository;
  builds: BuildRepository;
  releases: ReleaseRepository;
  containers: ContainerRepository;
  domains: DomainRepository;
  keys: KeyRepository;
  permissions: PermissionRepository;
  certificates: CertificateRepository;
  deploys: DeployLeaseRepository;
  /** The audit journal: appended in the transaction of the change it records. */
  events: EventRepository;
  webhooks: WebhookRepository;
  /** Webhook deliveries, queued in the transaction of the event they deliver. */
  deliveries: DeliveryRepository;
}

/** Runs work atomically: everything written inside `transaction` is committed together or not at all. */
export interface UnitOfWork {
  /** Repositories outside any transaction, for reads. */
  readonly repositories: Repositories;
  /**
   * Runs `work` in one transaction and commits when it resolves; rolls back and rethrows
   * when it rejects. Implementations retry the whole work when it throws
   * ReleaseVersionTaken or the database reports a serialization failure.
   */
  transaction<T>(work: (repositories: Repositories) => Promise<T>): Promise<T>;
}
