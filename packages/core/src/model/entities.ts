/** A registered account. `username` is immutable and is the reference other records use. */
export interface User {
  id: number;
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  passwordHash: string;
  isSuperuser: boolean;
  isStaff: boolean;
  isActive: boolean;
  lastLogin: Date | null;
  dateJoined: Date;
}

/** A user before the store has given it an id. */
export type NewUser = Omit<User, 'id'>;

/** An API token, kept only as a hash. */
export interface Token {
  hash: string;
  username: string;
  created: Date;
  expires: Date | null;
}

/** Process type to desired number of containers. */
export type Structure = Record<string, number>;

/** An application. `id` is its name, unique and DNS-safe. */
export interface App {
  uuid: string;
  id: string;
  owner: string;
  structure: Structure;
  created: Date;
  updated: Date;
}

/** Process type to memory limit, e.g. `{ web: '512M' }`. */
export type MemoryLimits = Record<string, string>;
/** Process type to CPU shares, 0..1024. */
export type CpuLimits = Record<string, number>;
/** Scheduling tags. */
export type Tags = Record<string, string>;

/** One immutable configuration of an app; each release points to one. */
export interface Config {
  uuid: string;
  app: string;
  owner: string;
  values: Record<string, string>;
  memory: MemoryLimits;
  cpu: CpuLimits;
  tags: Tags;
  created: Date;
  updated: Date;
}

/** Process type to command, from a Procfile. */
export type Procfile = Record<string, string>;

/** A build: an image, and for source builds the commit, Procfile and Dockerfile. */
export interface Build {
  uuid: string;
  app: string;
  owner: string;
  image: string;
  dockerfile: string;
  procfile: Procfile;
  sha: string;
  /**
   * Where the build's files are on the controller's machine (builds from a git push); absent
   * or null for image builds. Never shown by the API: the scheduler runs the build's commands there.
   */
  workdir?: string | null;
  created: Date;
  updated: Date;
}

/** A numbered, immutable pair of (build, config). */
export interface Release {
  uuid: string;
  app: string;
  owner: string;
  version: number;
  build: string | null;
  config: string;
  summary: string;
  created: Date;
  updated: Date;
}

/** The states a container goes through; the scheduler reports them. */
export const CONTAINER_STATES = ['initialized', 'created', 'up', 'down', 'crashed', 'error', 'destroyed'] as const;
export type ContainerState = (typeof CONTAINER_STATES)[number];

/** One instance of a process type of an app, on one release. */
export interface Container {
  uuid: string;
  app: string;
  owner: string;
  release: number;
  type: string;
  num: number;
  state: ContainerState;
  created: Date;
  updated: Date;
}

/**
 * An app's deploy in progress: who holds the right to change the app's containers, the
 * release being rolled out and the containers started for it that no row records yet.
 * One per app at most; a lease whose `expires` has passed belongs to a holder that stopped
 * renewing it (it died), and may be taken over after its containers are stopped.
 */
export interface DeployLease {
  app: string;
  /** Unique per acquisition. */
  holder: string;
  /** The release version being rolled out; null for changes that make no release (scale, restart, delete). */
  version: number | null;
  /** Ids of the containers this deploy has started or is about to start, not yet published. */
  containers: string[];
  started: Date;
  heartbeat: Date;
  expires: Date;
}

/** A custom domain routed to an app. Stored in lower case without a trailing dot. */
export interface Domain {
  uuid: string;
  app: string;
  domain: string;
  owner: string;
  created: Date;
  updated: Date;
}

/** An SSH public key of a user. */
export interface Key {
  uuid: string;
  id: string;
  public: string;
  fingerprint: string;
  owner: string;
  created: Date;
  updated: Date;
}

/** A TLS certificate with its private key (kept sealed). */
export interface Certificate {
  id: number;
  commonName: string;
  owner: string;
  certificate: string;
  /** The private key, encrypted with the server secret. Never returned by the API. */
  sealedKey: string;
  san: string[];
  fingerprint: string;
  issuer: string;
  starts: Date;
  expires: Date;
  created: Date;
  updated: Date;
}

/** A certificate before the store has given it an id. */
export type NewCertificate = Omit<Certificate, 'id'>;

/** One line of an application's log. */
export interface LogEntry {
  time: Date;
  /** Where the line comes from, e.g. `svc[api]` or `myapp[web.1]`. */
  source: string;
  message: string;
}
