import { TooMany, type DomainError } from '../errors';
import type { BuildSlot, BuildSlotClaim, BuildSlotStore } from '../ports/build-slots';
import type { Clock, IdGenerator, Timer } from '../ports/services';

/** How long a build slot lasts without being renewed; it is renewed every third of that while its build runs. */
export const BUILD_SLOT_TTL_MS = 60_000;

/** The refusal of a build past the user's quota. */
export function tooManyBuilds(held: number): TooMany {
  return new TooMany('BUILD.TOO_MANY', `You already run ${held} builds, the most allowed at once; push again when one has finished.`);
}

/** BuildSlotStore in this process's memory: for one controller process (the embedded one, tests). */
export class InMemoryBuildSlotStore implements BuildSlotStore {
  private readonly slots = new Map<string, BuildSlot>();

  async acquire(slot: BuildSlot, limit: number, now: Date): Promise<BuildSlotClaim> {
    for (const [build, held] of this.slots) if (held.username === slot.username && held.expires <= now) this.slots.delete(build);
    const held = this.of(slot.username);
    if (held >= limit) return { taken: false, held };
    this.slots.set(slot.build, { ...slot });
    return { taken: true, held };
  }

  async renew(build: string, expires: Date): Promise<void> {
    const slot = this.slots.get(build);
    if (slot !== undefined) slot.expires = expires;
  }

  async release(build: string): Promise<void> {
    this.slots.delete(build);
  }

  /** The slots `username` holds now, live or not yet removed. */
  of(username: string): number {
    let count = 0;
    for (const slot of this.slots.values()) if (slot.username === username) count += 1;
    return count;
  }
}

/**
 * The builds each user has running: a user may run at most `limit` at once
 * (`QUOTA_BUILDS_PER_USER`), so no tenant can occupy the engine or the compiler with builds
 * sent together. The count is the store's: with a database shared by several controller
 * processes, it holds across them.
 */
export class BuildSlots {
  private readonly ttlMs: number;
  private readonly refusal: (held: number) => DomainError;

  /**
   * `options.refusal` is the error of a take past the limit (default: `tooManyBuilds`); the
   * same slots count other things that run, such as one-off processes (`RunSlots`).
   */
  constructor(
    private readonly store: BuildSlotStore,
    private readonly clock: Clock,
    private readonly timer: Timer,
    private readonly ids: Pick<IdGenerator, 'uuid'>,
    options: { ttlMs?: number; refusal?: (held: number) => DomainError } = {},
  ) {
    this.ttlMs = options.ttlMs ?? BUILD_SLOT_TTL_MS;
    this.refusal = options.refusal ?? tooManyBuilds;
  }

  /**
   * Takes one more build slot of `username`, renewed until the function returned gives it
   * back (once).
   * @throws TooMany (`BUILD.TOO_MANY`, or the constructor's refusal) when the user already holds `limit` slots.
   */
  async take(username: string, limit: number): Promise<() => Promise<void>> {
    const now = this.clock.now();
    const build = this.ids.uuid();
    const claim = await this.store.acquire({ build, username, started: now, expires: this.expiry() }, limit, now);
    if (!claim.taken) throw this.refusal(claim.held);
    const stopRenewing = this.timer.every(this.ttlMs / 3, () => void this.store.renew(build, this.expiry()).catch(() => undefined));
    let held = true;
    return async () => {
      if (!held) return;
      held = false;
      stopRenewing();
      // A slot the store could not remove now expires: the build's own outcome is what the caller hears.
      await this.store.release(build).catch(() => undefined);
    };
  }

  private expiry(): Date {
    return new Date(this.clock.now().getTime() + this.ttlMs);
  }
}
