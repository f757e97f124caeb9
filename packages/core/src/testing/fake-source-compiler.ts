import { buildFailed } from '../rules/sources';
import type { BuildpackCatalog, CompiledSource, CompileRequest, CompileSession, InstalledBuildpack, SourceCompiler } from '../ports/builds';
import type { FakeImageBuilder } from './fake-image-builder';

/** How one buildpack behaves in a FakeSourceCompiler; unset: it detects nothing. */
export interface FakeBuildpackBehaviour {
  /**
   * What `bin/detect` prints; null (the default): it exits non-zero. A function decides from
   * the build's request (e.g. whether a file is in its directory).
   */
  detect?: string | null | ((request: CompileRequest) => string | null);
  /** The lines `bin/compile` prints. */
  compileOutput?: string[];
  /** When set, `bin/compile` fails with this reason (`BUILD.FAILED`). */
  compileFails?: string;
  /** What `bin/release` prints (default: nothing, no default process type). */
  release?: string;
}

/** One step a FakeSourceCompiler was asked for, in order. */
export type CompileCall =
  | { step: 'open'; request: CompileRequest }
  | { step: 'detect' | 'compile' | 'release'; buildpack: string }
  | { step: 'finish' | 'discard' }
  | { step: 'removeApp'; app: string; appUuid: string };

/**
 * A source compiler for core tests: each buildpack behaves as it is told (`behave`), every
 * step is recorded, and the result is the checked-out directory, or, given a
 * FakeImageBuilder, an image "built" in it (so a failed release can be seen to remove it).
 */
export class FakeSourceCompiler implements SourceCompiler {
  /** Every step asked for, oldest first. */
  readonly calls: CompileCall[] = [];
  private readonly behaviours = new Map<string, FakeBuildpackBehaviour>();
  private openFailure: Error | null = null;
  private finishFailure: Error | null = null;
  private live = 0;
  /** Why builds cannot run (`cannotRun`); null: they can. */
  private reason: string | null = null;
  /** How many times `whyBuildsCannotRun` was asked. */
  readinessChecks = 0;

  constructor(private readonly images: FakeImageBuilder | null = null) {}

  /** Makes `whyBuildsCannotRun` answer `reason` from now on (null: builds can run again). */
  cannotRun(reason: string | null): this {
    this.reason = reason;
    return this;
  }

  async whyBuildsCannotRun(): Promise<string | null> {
    this.readinessChecks += 1;
    return this.reason;
  }

  /** Sets how the buildpack named `name` behaves. */
  behave(name: string, behaviour: FakeBuildpackBehaviour): this {
    this.behaviours.set(name, behaviour);
    return this;
  }

  /** Makes the next `open` throw `error` (an engine that is down, say). */
  failNextOpen(error: Error = new Error('compile environment unavailable (injected)')): void {
    this.openFailure = error;
  }

  /** Makes the next `finish` throw `error`. */
  failNextFinish(error: Error = new Error('commit failed (injected)')): void {
    this.finishFailure = error;
  }

  /** The steps recorded, as `step` or `step:buildpack`, for compact assertions. */
  steps(): string[] {
    return this.calls.map((call) => ('buildpack' in call ? `${call.step}:${call.buildpack}` : call.step));
  }

  /** Sessions left neither finished nor discarded. */
  get openSessions(): number {
    return this.live;
  }

  async open(request: CompileRequest): Promise<CompileSession> {
    this.calls.push({ step: 'open', request: { ...request, env: { ...request.env } } });
    const failure = this.openFailure;
    this.openFailure = null;
    if (failure !== null) throw failure;
    this.live += 1;
    return new FakeCompileSession(this, request, () => {
      this.live -= 1;
    });
  }

  async removeApp(app: string, appUuid: string): Promise<void> {
    this.calls.push({ step: 'removeApp', app, appUuid });
  }

  /** @internal */
  behaviourOf(buildpack: InstalledBuildpack): FakeBuildpackBehaviour {
    return this.behaviours.get(buildpack.name) ?? {};
  }

  /** @internal */
  async keep(request: CompileRequest, output: (line: string) => void): Promise<CompiledSource> {
    const failure = this.finishFailure;
    this.finishFailure = null;
    if (failure !== null) throw failure;
    if (this.images === null) return { image: null, workdir: request.directory };
    const image = await this.images.build({ app: request.app, appUuid: request.appUuid, directory: request.directory, kind: 'procfile' }, output);
    return { image, workdir: null };
  }
}

class FakeCompileSession implements CompileSession {
  private closed = false;

  constructor(
    private readonly compiler: FakeSourceCompiler,
    private readonly request: CompileRequest,
    private readonly onClose: () => void,
  ) {}

  private assertOpen(step: string): void {
    if (this.closed) throw new Error(`${step} on a closed compile session`);
  }

  async detect(buildpack: InstalledBuildpack): Promise<string | null> {
    this.assertOpen('detect');
    this.compiler.calls.push({ step: 'detect', buildpack: buildpack.name });
    const detect = this.compiler.behaviourOf(buildpack).detect ?? null;
    const answer = typeof detect === 'function' ? detect({ ...this.request }) : detect;
    return answer === null ? null : answer || buildpack.name;
  }

  async compile(buildpack: InstalledBuildpack, output: (line: string) => void): Promise<void> {
    this.assertOpen('compile');
    this.compiler.calls.push({ step: 'compile', buildpack: buildpack.name });
    const behaviour = this.compiler.behaviourOf(buildpack);
    for (const line of behaviour.compileOutput ?? []) output(line);
    if (behaviour.compileFails !== undefined) throw buildFailed(behaviour.compileFails);
  }

  async release(buildpack: InstalledBuildpack): Promise<string> {
    this.assertOpen('release');
    this.compiler.calls.push({ step: 'release', buildpack: buildpack.name });
    return this.compiler.behaviourOf(buildpack).release ?? '';
  }

  async finish(output: (line: string) => void): Promise<CompiledSource> {
    this.assertOpen('finish');
    this.compiler.calls.push({ step: 'finish' });
    this.close();
    return this.compiler.keep(this.request, output);
  }

  async discard(): Promise<void> {
    this.compiler.calls.push({ step: 'discard' });
    this.close();
  }

  private close(): void {
    if (!this.closed) this.onClose();
    this.closed = true;
  }
}

/**
 * A buildpack catalog for core tests: the installed buildpacks it is given, and fetches that
 * answer a buildpack named by the URL (and `#ref`), recorded in `fetches`, or fail on demand.
 */
export class FakeBuildpackCatalog implements BuildpackCatalog {
  /** Every fetch asked for, oldest first. */
  readonly fetches: Array<{ url: string; ref: string | null }> = [];
  private fetchFailure: Error | null = null;

  constructor(private readonly buildpacks: readonly InstalledBuildpack[] = FAKE_BUILDPACKS) {}

  async installed(): Promise<InstalledBuildpack[]> {
    return this.buildpacks.map((buildpack) => ({ ...buildpack }));
  }

  async fetch(url: string, ref: string | null, output: (line: string) => void): Promise<InstalledBuildpack> {
    this.fetches.push({ url, ref });
    const failure = this.fetchFailure;
    this.fetchFailure = null;
    if (failure !== null) throw failure;
    const name = ref === null ? url : `${url}#${ref}`;
    output(`Fetched ${name}`);
    return { name, directory: `/fake/buildpacks/fetched/${this.fetches.length}` };
  }

  /** Makes the next fetch throw `error`. */
  failNextFetch(error: Error): void {
    this.fetchFailure = error;
  }
}

/** The installed buildpacks a FakeBuildpackCatalog holds by default, in the order they are tried. */
export const FAKE_BUILDPACKS: readonly InstalledBuildpack[] = Object.freeze([
  { name: 'node', directory: '/fake/buildpacks/node', needs: 'package.json' },
  { name: 'plain', directory: '/fake/buildpacks/plain', needs: 'a Procfile' },
]);
