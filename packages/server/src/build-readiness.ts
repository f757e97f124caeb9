/** The logger the report of builds writes to. */
interface BuildsLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * What the controller says about whether git pushes can be built: the core's `CheckBuilds`
 * is asked at start-up, then each time `/readyz` asks. The probe never waits for it: it gets
 * the last answer, and a new one is asked for in the background (the core keeps each
 * builder's answer for a short while, so a probe costs no check of its own most of the time).
 * Each reason is logged once, in words, when it appears (and again only if it goes and comes
 * back), except one the start-up has already said (the sandbox's: apps cannot run at all);
 * that builds can run again is logged once too.
 */
export class BuildReadinessReport {
  private reasons: string[] = [];
  private asking: Promise<string[]> | null = null;

  constructor(
    private readonly check: () => Promise<string[]>,
    private readonly logger: BuildsLogger,
    /** Reasons already logged in other words (the sandbox's), not to be logged twice. */
    private readonly alreadySaid: () => string[] = () => [],
  ) {}

  /** The first answer, at start-up, logged; resolves with the reasons (none when builds can run). */
  start(): Promise<string[]> {
    return this.ask();
  }

  /** The last answer, at once; a newer one is asked for meanwhile. */
  current(): string[] {
    void this.ask();
    return this.reasons;
  }

  private ask(): Promise<string[]> {
    this.asking ??= this.check()
      .catch(() => this.reasons)
      .then((reasons) => {
        this.said(this.reasons, reasons);
        this.reasons = reasons;
        return reasons;
      })
      .finally(() => {
        this.asking = null;
      });
    return this.asking;
  }

  /** Logs each new reason once, and that builds run again once the last reason went. */
  private said(before: string[], now: string[]): void {
    const known = new Set([...before, ...this.alreadySaid()]);
    for (const reason of now) {
      if (!known.has(reason)) this.logger.error({ builds: 'unavailable' }, `git pushes are refused until this is fixed: ${reason}`);
    }
    if (before.length > 0 && now.length === 0) this.logger.info({ builds: 'ready' }, 'builds can run again: git pushes are built');
  }
}
