import type { SourceFiles } from '../rules/sources';
import type { CoreDependencies } from './context';

/**
 * How long a builder's answer to "can builds run?" is kept before it is asked again: the
 * readiness probe and every push ask, and a check may make an engine network or install
 * firewall rules; a machine fixed meanwhile is seen within this time.
 */
export const BUILD_READINESS_TTL_MS = 15_000;

/** A builder that may say why its builds cannot run (the ports' optional `whyBuildsCannotRun`). */
interface Builder {
  whyBuildsCannotRun?(): Promise<string | null>;
}

/** A builder's answer, kept: `reason` is undefined while the question is still out. */
interface KeptAnswer {
  askedAt: number;
  answer: Promise<string | null>;
  reason: string | null | undefined;
}

const messageOf = (error: unknown): string => (error instanceof Error && error.message ? error.message : String(error));

/**
 * Whether pushed commits can be built now: each builder configured (the buildpack compiler,
 * the image builder) is asked why its builds cannot run, and its answer is kept for
 * `BUILD_READINESS_TTL_MS`. The readiness probe and the start-up log ask every builder; a
 * push asks the one its commit needs, before anything of it is checked out.
 */
export class CheckBuilds {
  private readonly kept = new Map<Builder, KeptAnswer>();

  constructor(private readonly deps: Pick<CoreDependencies, 'compiler' | 'buildpacks' | 'images' | 'clock'>) {}

  /**
   * Why builds cannot run now, one sentence each naming the fix, without repeats; empty when
   * they can. Without `source`, every builder configured is asked. With a pushed commit's
   * files, only the builder that commit needs is (buildpacks for a commit without a
   * Dockerfile when they are configured, else the image builder; none when neither builds
   * it), and it is asked again at once when its kept answer was a reason: a refused push
   * costs the pusher more than one more check, and the machine may have been fixed meanwhile.
   * Never throws: a builder whose check fails has that failure as its reason.
   */
  async execute(source?: SourceFiles): Promise<string[]> {
    const builders = source === undefined ? this.builders() : this.builderOf(source);
    const reasons = await Promise.all(builders.map((builder) => this.ask(builder, source !== undefined)));
    return [...new Set(reasons.filter((reason): reason is string => reason !== null))];
  }

  /** Every builder configured: the compiler only with a buildpack catalog to compile with. */
  private builders(): Builder[] {
    const compiler = this.compiler();
    const images = this.deps.images ?? null;
    return [...(compiler === null ? [] : [compiler]), ...(images === null ? [] : [images])];
  }

  /** The builder a pushed commit needs, as DeploySource chooses it. */
  private builderOf(source: SourceFiles): Builder[] {
    const compiler = this.compiler();
    const images = this.deps.images ?? null;
    if (compiler !== null && source.dockerfile === null) return [compiler];
    return images === null ? [] : [images];
  }

  /** The buildpack compiler, when there is a catalog to compile with. */
  private compiler(): Builder | null {
    const { compiler, buildpacks } = this.deps;
    return (buildpacks ?? null) === null ? null : (compiler ?? null);
  }

  /** The builder's kept answer, or a new one when it is out of date (or a reason, and `againWhenRefused`); one question at a time. */
  private ask(builder: Builder, againWhenRefused: boolean): Promise<string | null> {
    const check = builder.whyBuildsCannotRun;
    if (check === undefined) return Promise.resolve(null);
    const now = this.deps.clock.now().getTime();
    const kept = this.kept.get(builder);
    if (kept !== undefined) {
      const pending = kept.reason === undefined;
      const current = now - kept.askedAt < BUILD_READINESS_TTL_MS;
      if (pending || (current && !(againWhenRefused && kept.reason !== null))) return kept.answer;
    }
    const entry: KeptAnswer = { askedAt: now, answer: Promise.resolve(null), reason: undefined };
    entry.answer = Promise.resolve()
      .then(() => check.call(builder))
      .catch((error: unknown) => `builds cannot be checked: ${messageOf(error)}`)
      .then((reason) => {
        entry.reason = reason;
        return reason;
      });
    this.kept.set(builder, entry);
    return entry.answer;
  }
}
