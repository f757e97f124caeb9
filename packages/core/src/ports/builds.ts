/**
 * The ports of a buildpack build (the classic Heroku contract): the core sequences the steps
 * (detect, compile, release) and decides what the result runs; adapters run each step where
 * the app's own code would run, confined like it (a throwaway container of the stack image,
 * or the process sandbox as the app's user).
 */

/** A buildpack on the controller's machine: a directory with `bin/detect`, `bin/compile` and `bin/release`. */
export interface InstalledBuildpack {
  /** Its name: the directory's name for an installed one, the URL (with `#ref`) for a fetched one. */
  name: string;
  /** The absolute path of its directory on the controller's machine. */
  directory: string;
  /**
   * What its `bin/detect` looks for, in a few words (e.g. `package.json`), for the message of
   * a push no buildpack detects; absent or null when unknown.
   */
  needs?: string | null;
}

/**
 * A destination build steps may reach besides the public internet (the operator's
 * `BUILD_NETWORK_ALLOW`: an internal package mirror on a private address, or on this machine):
 * an IPv4 address or range, and one TCP port of it or every port (null).
 */
export interface BuildDestination {
  /** An IPv4 address with its prefix length, e.g. `10.1.2.3/32` or `10.8.0.0/16`. */
  cidr: string;
  port: number | null;
}

/** The buildpacks a build can use. */
export interface BuildpackCatalog {
  /**
   * The installed buildpacks in the order they are tried when the app names none: the
   * operator's (`BUILDPACKS_DIR`) first, then the built-ins, the plain one last.
   */
  installed(): Promise<InstalledBuildpack[]>;
  /**
   * Fetches the buildpack at a git URL (a branch, tag or commit when `ref` is not null) into
   * a directory of the controller's, reusing an earlier fetch of the same URL and ref. The
   * core calls it only for URLs the operator's allow-list admits.
   * @throws RequestRejected `BUILD.BUILDPACK_FETCH` when it cannot be fetched or is no buildpack.
   */
  fetch(url: string, ref: string | null, output: (line: string) => void): Promise<InstalledBuildpack>;
}

/** A pushed commit to compile with buildpacks. */
export interface CompileRequest {
  /** The app (its id) and its uuid: the build cache and the result belong to this app alone. */
  app: string;
  appUuid: string;
  /** The directory holding the commit's files, as checked out. */
  directory: string;
  /** The app's config values: one file each in `ENV_DIR` for `bin/compile`. */
  env: Record<string, string>;
}

/** What a compile leaves to run: an image (engines) or a directory (the process scheduler). */
export interface CompiledSource {
  /** The image the build runs (an engine's id, or a reference by digest when pushed to a registry); null without an engine. */
  image: string | null;
  /** The directory the build's processes run in; null when the image holds the files. */
  workdir: string | null;
}

/**
 * One build in progress: the commit's files in a confined place (`BUILD_DIR` is `/app`),
 * its cache (`CACHE_DIR`) and its config (`ENV_DIR`). Each step runs as the app's user with
 * the app's limits, on the build network, within the build's time limit.
 */
export interface CompileSession {
  /**
   * Runs `bin/detect BUILD_DIR`: resolves with the name it prints (its first line, or the
   * buildpack's name when it prints none) when it exits 0, null when it exits non-zero.
   */
  detect(buildpack: InstalledBuildpack): Promise<string | null>;
  /**
   * Runs `bin/compile BUILD_DIR CACHE_DIR ENV_DIR`, sending each line of its output to `output`.
   * @throws RequestRejected `BUILD.FAILED` (see `buildFailed`) when it exits non-zero or passes
   *   a limit (time, memory, output, cache), with the reason.
   */
  compile(buildpack: InstalledBuildpack, output: (line: string) => void): Promise<void>;
  /** Runs `bin/release BUILD_DIR` and resolves with what it prints (YAML; see `parseBuildpackRelease`). */
  release(buildpack: InstalledBuildpack): Promise<string>;
  /**
   * Keeps the compiled result: on an engine, `/app` becomes one layer on the stack image,
   * labelled as the app's (pushed to the registry when there is one); without one, the
   * compiled directory. The session is closed.
   */
  finish(output: (line: string) => void): Promise<CompiledSource>;
  /** Throws away whatever the session made (a container, a layer); never throws. The session is closed. */
  discard(): Promise<void>;
}

/** Compiles pushed commits with buildpacks, and keeps each app's build cache. */
export interface SourceCompiler {
  /**
   * Opens a build of a commit.
   * @throws Unavailable-like errors when the compile environment cannot be made (no stack
   *   image, the engine down); RequestRejected `BUILD.FAILED` when the commit is over a limit.
   */
  open(request: CompileRequest): Promise<CompileSession>;
  /** Removes what the builds of an app left (its build cache); an app with nothing left is not an error. */
  removeApp(app: string, appUuid: string): Promise<void>;
  /**
   * Why no build can be opened here now, in one sentence that names the fix (no sandbox, a
   * build network that cannot be made or guarded, no stack image and no way to make one);
   * null when builds can run. Optional: a compiler without it is taken as always ready.
   * Never throws: a check that fails is the reason.
   */
  whyBuildsCannotRun?(): Promise<string | null>;
}
