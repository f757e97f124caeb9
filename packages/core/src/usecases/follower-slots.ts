import { TooMany, Unavailable } from '../errors';
import type { Settings } from './context';

/** What one kind of stream (logs, events) is called in its refusals. */
export interface StreamKind {
  /** The error code of a refusal, e.g. `LOGS.TOO_MANY_FOLLOWERS`. */
  code: string;
  /** The streams, in the instance-wide refusal: `log streams`. */
  streams: string;
  /** What a user follows, in the per-user refusal: `logs`. */
  followed: string;
}

/**
 * The open streams of one kind on this instance: at most `logFollowersPerUser` per user and
 * `logFollowersTotal` in all. `hold` counts one more and gives back a function that frees
 * it (once).
 */
export class FollowerSlots {
  /** Open streams per username. */
  private readonly following = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly settings: Pick<Settings, 'logFollowersPerUser' | 'logFollowersTotal'>,
    private readonly kind: StreamKind,
  ) {}

  /**
   * @throws Unavailable when the instance holds the most streams allowed; TooMany when the
   *   user does.
   */
  hold(username: string): () => void {
    const { logFollowersPerUser, logFollowersTotal } = this.settings;
    if (this.total >= logFollowersTotal) {
      throw new Unavailable(this.kind.code, `Too many ${this.kind.streams} are open on this server; try again later.`);
    }
    const mine = this.following.get(username) ?? 0;
    if (mine >= logFollowersPerUser) {
      throw new TooMany(this.kind.code, `You already follow ${mine} ${this.kind.followed}, the most allowed at once; close one first.`);
    }
    this.following.set(username, mine + 1);
    this.total += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.total -= 1;
      const left = (this.following.get(username) ?? 1) - 1;
      if (left > 0) this.following.set(username, left);
      else this.following.delete(username);
    };
  }
}
