import { TooMany } from '../errors';

/**
 * The builds each user has running, counted in this process: a user may run at most `limit`
 * at once (`QUOTA_BUILDS_PER_USER`), so no tenant can occupy the engine or the compiler with
 * builds sent together.
 */
export class BuildSlots {
  private readonly running = new Map<string, number>();

  /**
   * Counts one more build of `username`; the function returned gives the slot back (once).
   * @throws TooMany (`BUILD.TOO_MANY`) when the user already runs `limit` builds.
   */
  take(username: string, limit: number): () => void {
    const mine = this.running.get(username) ?? 0;
    if (mine >= limit) {
      throw new TooMany('BUILD.TOO_MANY', `You already run ${mine} builds, the most allowed at once; push again when one has finished.`);
    }
    this.running.set(username, mine + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.running.get(username) ?? 1) - 1;
      if (left > 0) this.running.set(username, left);
      else this.running.delete(username);
    };
  }

  /** The builds `username` runs now. */
  of(username: string): number {
    return this.running.get(username) ?? 0;
  }
}
