import type { ContainerState, LogEntry, Procfile } from '../model/entities';

/** What a scheduler needs to start one container. */
export interface ContainerSpec {
  /** The container's uuid; stable across restarts. */
  id: string;
  app: string;
  type: string;
  num: number;
  release: number;
  image: string;
  /** The process type's command from the Procfile; null for image builds (the image's own command). */
  command: string | null;
  /** Where the build's files are, when it has any (source builds); null otherwise. */
  workdir: string | null;
  /** Config values plus SVC_APP and SVC_RELEASE; a scheduler that runs processes adds the PORT it allocates. */
  env: Record<string, string>;
  /** Memory limit such as `512M`, if any. */
  memory: string | null;
  /** CPU shares 0..1024, if any. */
  cpu: number | null;
}

/** A one-off command to run to completion. */
export interface RunSpec {
  app: string;
  release: number;
  image: string;
  workdir: string | null;
  command: string;
  env: Record<string, string>;
  timeoutSeconds: number;
  outputLimitBytes: number;
}

/** The outcome of a one-off command. */
export interface RunResult {
  exitCode: number;
  output: string;
}

/** A build as a scheduler is asked about before a rollback runs it again (see `Scheduler.checkRunnable`). */
export interface BuildToRun {
  app: string;
  /** The release that would run it (the next one): a scheduler that pulls once per release pulls for it. */
  release: number;
  image: string;
  /** Where the build's files are on the controller's machine (a git push built for the process scheduler); null for images. */
  workdir: string | null;
  /** The build's process types and their commands; empty for an image that runs its own command. */
  procfile: Procfile;
}

/**
 * Runs containers. Any method may throw; the core turns a failure into a 503 and undoes
 * what the operation had started, except a DomainError of kind `invalid` from `start` (the
 * request's own fault, e.g. an image that no registry has), which is answered as it is.
 */
export interface Scheduler {
  /** Creates and starts a container; resolves with its state once it is up. */
  start(spec: ContainerSpec): Promise<ContainerState>;
  /** Stops and removes a container. Stopping an unknown container is not an error. */
  stop(id: string): Promise<void>;
  /** Runs a one-off command and waits for it. */
  run(spec: RunSpec): Promise<RunResult>;
  /** Current states of the given containers; unknown ids are left out. */
  states(ids: string[]): Promise<Map<string, ContainerState>>;
  /**
   * Optional, for an engine with a rollout of its own (Swarm's services): starts the new
   * containers of one process type of an app at once, instead of one `start` each. The core
   * calls it once per process type of a change and keeps the policy:
   * - `specs` are the type's new containers, all of one app, type and release (at least one);
   *   `replacing` the ids of that type's running containers they replace (maybe none, e.g.
   *   a scale-up), which the core stops itself once the change is published.
   * - Resolves once every new container is up (a routed one healthy, as `start` would say),
   *   with the state of each of `specs`' ids; the replaced ones keep running meanwhile and
   *   afterwards, until the core stops them.
   * - Rejects when any new container does not come up, and only once the replaced
   *   containers are as they were before the call (running, serving, not restarted); the
   *   error is what `start` would throw (a DomainError of kind `invalid` for the request's
   *   own fault). What is left of the new containers may still run: the core then stops
   *   every id of `specs`, as it does after a failure of another type's step or of the
   *   publishing transaction, and stopping them must leave the replaced containers serving.
   */
  rollType?(specs: ContainerSpec[], replacing: string[]): Promise<Map<string, ContainerState>>;
  /**
   * Optional: how many `start`s of one app's containers the scheduler takes at once (absent:
   * one after the other). An engine whose starts mostly wait on it (adopting a container that
   * still runs, a health check) says more, and RestoreContainers starts that many at a time
   * (at most RESTORE_CONCURRENCY) when the controller comes back.
   */
  readonly concurrentStarts?: number;
  /**
   * Optional: whether this scheduler can run a build at all, asked before a rollback starts or
   * stops anything. Resolves with null when it can, as far as is known before a start (an image
   * present or pulled now), else with the reason, worded for the user after "cannot be rolled
   * back to: " (a build made for another scheduler, an image the engine cannot get). Rejects
   * only when the engine itself fails, which the core answers with a 503. Absent: every build is
   * taken as runnable, and a start that fails says why.
   */
  checkRunnable?(build: BuildToRun): Promise<string | null>;
}

/** Receives the entries appended to an app's log, oldest first; it should return quickly. */
export type LogListener = (entries: LogEntry[]) => void;

/** Stores the lines of each app's log. */
export interface LogStore {
  append(app: string, entries: LogEntry[]): Promise<void>;
  /** The last `lines` entries, oldest first. */
  tail(app: string, lines: number): Promise<LogEntry[]>;
  remove(app: string): Promise<void>;
  /**
   * Calls `listener` with the entries appended to the app's log after this call, in append
   * order, until the returned function is called (calling it again does nothing). A store
   * kept in one process notifies right after each append resolves. A store shared by several
   * controller processes (a database) must also deliver the lines the other processes append,
   * e.g. by polling for new rows about once a second while the app has listeners; around the
   * moment of subscribing it may deliver a line that `tail` also returns, and callers that
   * combine the two drop that overlap. Entries are the listener's own copies.
   */
  subscribe(app: string, listener: LogListener): () => void;
}

/** An OpenSSH public key as understood by the parser. */
export interface ParsedPublicKey {
  /** e.g. `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`. */
  type: string;
  /** Key size in bits (RSA modulus, curve size). */
  bits: number;
  /** `SHA256:<base64 without padding>`. */
  fingerprint: string;
  /** `<type> <base64>` with the comment, if any, kept after a single space. */
  normalized: string;
}

/** Parses OpenSSH public keys. */
export interface PublicKeyParser {
  /** @throws ValidationFailed on field `public` when the text is not a supported public key. */
  parse(text: string): ParsedPublicKey;
}

/** A certificate as understood by the parser. */
export interface ParsedCertificate {
  commonName: string | null;
  san: string[];
  issuer: string;
  fingerprint: string;
  starts: Date;
  expires: Date;
  /** The certificate re-encoded as PEM. */
  pem: string;
}

/** Parses PEM certificates and checks that a private key belongs to them. */
export interface CertificateParser {
  /** @throws ValidationFailed on `certificate` or `key` when either is unreadable or they do not match. */
  parse(certificatePem: string, keyPem: string): ParsedCertificate;
}

/** Slow salted password hashing. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
}

/** Mints API tokens and derives the hash they are stored under. */
export interface TokenGenerator {
  /** 40 lowercase hex characters from a cryptographic source. */
  generate(): string;
  hash(token: string): string;
}

/** Encrypts secrets at rest with the server secret. */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

/** The current time. */
export interface Clock {
  now(): Date;
}

/**
 * Waits and repeats, on the same time as the Clock: the core never calls setTimeout or
 * setInterval itself, so that its tests move time instead of waiting for it.
 */
export interface Timer {
  /** Resolves once `milliseconds` have passed. */
  sleep(milliseconds: number): Promise<void>;
  /**
   * Calls `task` every `milliseconds` until the returned function is called (calling it again
   * does nothing). A repeating task never keeps the process alive by itself.
   */
  every(milliseconds: number, task: () => void): () => void;
}

/** New identifiers. */
export interface IdGenerator {
  uuid(): string;
}

/** Random choices (app names). */
export interface RandomSource {
  /** An integer in [0, maxExclusive). */
  int(maxExclusive: number): number;
}

/** A checked-out commit to turn into an image. */
export interface ImageBuildRequest {
  /** The app the image belongs to (its id); the builder labels the image with it. */
  app: string;
  /**
   * The app's uuid, also on the image: an app deleted and created again under the same id is
   * another app, which must not build from the images the first one left.
   */
  appUuid: string;
  /** The directory holding the commit's files (the build context). */
  directory: string;
  /**
   * `dockerfile`: build the directory's own Dockerfile. `procfile`: lay the directory onto
   * the platform's stack image as one new layer (`/app`, owned by the user apps run as).
   */
  kind: 'dockerfile' | 'procfile';
}

/**
 * Builds the images of pushed commits and removes them. A build that fails leaves nothing
 * behind: no image and no intermediate layer.
 */
export interface ImageBuilder {
  /**
   * Builds an image, sending each line of the build's output to `output` as it comes.
   * Resolves with the engine's id of the image, not yet named; a builder that pushes builds
   * to a registry resolves with the pushed image's reference by digest
   * (`<registry>/<app>@sha256:...`), which the build then records as its image.
   * @throws RequestRejected `BUILD.FAILED` (see `buildFailed`) when the source does not build:
   *   a bad Dockerfile, a failing step, a build limit; any other error when the engine
   *   cannot be used.
   */
  build(request: ImageBuildRequest, output: (line: string) => void): Promise<string>;
  /** Names an image `reference` (such as `myapp:3`), taking the name from any image that had it. */
  tag(image: string, reference: string): Promise<void>;
  /** Removes an image (by id or reference by digest) with every name it has; an image that no longer exists is not an error. */
  remove(image: string): Promise<void>;
  /**
   * Removes the images this builder made for `app` whose names (or references by digest) are not in `keep`; an image
   * a container still uses stays. Resolves with the names removed.
   */
  prune(app: string, keep: readonly string[]): Promise<string[]>;
  /**
   * Removes every image this builder made for the app with that id and uuid (a deleted app's);
   * optional: a builder without it leaves them to `prune`. Images another app of the same id
   * made are never touched.
   */
  removeApp?(app: string, appUuid: string): Promise<void>;
  /**
   * Why no image can be built here now, in one sentence that names the fix (the engine does
   * not answer, say); null when builds can run. Optional: a builder without it is taken as
   * always ready. Never throws: a check that fails is the reason.
   */
  whyBuildsCannotRun?(): Promise<string | null>;
}
