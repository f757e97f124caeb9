import type { ImageBuilder, ImageBuildRequest } from '../ports/services';

/** An image the FakeImageBuilder holds: what it was built from and the names it has. */
export interface FakeImage {
  id: string;
  request: ImageBuildRequest;
  tags: Set<string>;
  /** With a registry: the reference by digest `build` answered (`<registry>/<app>@sha256:...`). */
  reference: string | null;
}

/**
 * An image builder for core tests: "builds" by recording the request, says a line of
 * output, names, removes and prunes in memory, and fails on demand so that tests can check
 * that a failed build or release keeps nothing. Given a registry, it answers each build as a
 * reference by digest (`<registry>/<app>@sha256:...`), as a builder that pushes does.
 */
export class FakeImageBuilder implements ImageBuilder {
  /** Every image built and not removed, by id. */
  readonly images = new Map<string, FakeImage>();
  /** Every build request received, oldest first. */
  readonly requests: ImageBuildRequest[] = [];
  private next = 1;
  private buildFailure: (() => Error) | null = null;
  private tagFailure: (() => Error) | null = null;
  private pruneFailure: (() => Error) | null = null;
  /** Images a container uses: prune leaves them. */
  readonly inUse = new Set<string>();

  /** Why builds cannot run (`cannotRun`); null: they can. */
  private reason: string | null = null;
  /** How many times `whyBuildsCannotRun` was asked. */
  readinessChecks = 0;

  constructor(private readonly registry: string | null = null) {}

  /** Makes `whyBuildsCannotRun` answer `reason` from now on (null: builds can run again). */
  cannotRun(reason: string | null): this {
    this.reason = reason;
    return this;
  }

  async whyBuildsCannotRun(): Promise<string | null> {
    this.readinessChecks += 1;
    return this.reason;
  }

  async build(request: ImageBuildRequest, output: (line: string) => void): Promise<string> {
    this.requests.push({ ...request });
    output(`Step 1/1 : building ${request.kind} of ${request.app}`);
    const failure = this.buildFailure;
    this.buildFailure = null;
    if (failure !== null) throw failure();
    const id = `sha256:${String(this.next++).padStart(64, '0')}`;
    const reference = this.registry === null ? null : `${this.registry}/${request.app}@${id}`;
    this.images.set(id, { id, request: { ...request }, tags: new Set(), reference });
    return reference ?? id;
  }

  /** The image an id or a reference by digest names. */
  private find(image: string): FakeImage | undefined {
    return this.images.get(image) ?? [...this.images.values()].find((held) => held.reference === image);
  }

  async tag(image: string, reference: string): Promise<void> {
    const failure = this.tagFailure;
    this.tagFailure = null;
    if (failure !== null) throw failure();
    const target = this.find(image);
    if (target === undefined) throw new Error(`No such image: ${image}`);
    for (const other of this.images.values()) other.tags.delete(reference);
    target.tags.add(reference);
  }

  /** Removes the images of the app with that id and uuid. */
  async removeApp(app: string, appUuid: string): Promise<void> {
    for (const [id, image] of this.images) {
      if (image.request.app === app && image.request.appUuid === appUuid) this.images.delete(id);
    }
  }

  async remove(image: string): Promise<void> {
    const target = this.find(image);
    if (target !== undefined) this.images.delete(target.id);
  }

  async prune(app: string, keep: readonly string[]): Promise<string[]> {
    const failure = this.pruneFailure;
    this.pruneFailure = null;
    if (failure !== null) throw failure();
    const removed: string[] = [];
    for (const image of [...this.images.values()]) {
      if (image.request.app !== app) continue;
      const names = [...image.tags];
      if (names.some((name) => keep.includes(name) || this.inUse.has(name))) continue;
      if (image.reference !== null && keep.includes(image.reference)) continue;
      this.images.delete(image.id);
      removed.push(...names);
    }
    return removed.sort();
  }

  /** The names of every image held, sorted. */
  tags(): string[] {
    return [...this.images.values()].flatMap((image) => [...image.tags]).sort();
  }

  /** Makes the next build fail with `error`. */
  failNextBuild(error: () => Error): void {
    this.buildFailure = error;
  }

  /** Makes the next tag fail. */
  failNextTag(error: () => Error = () => new Error('tag failed (injected)')): void {
    this.tagFailure = error;
  }

  /** Makes the next prune fail. */
  failNextPrune(error: () => Error = () => new Error('prune failed (injected)')): void {
    this.pruneFailure = error;
  }
}
