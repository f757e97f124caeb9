/** One running build's slot: it counts against its user's `QUOTA_BUILDS_PER_USER` until released or expired. */
export interface BuildSlot {
  /** The build's own id (unique). */
  build: string;
  /** The user the build is charged to: the holder of the key that pushed it. */
  username: string;
  started: Date;
  /** Past this instant the slot no longer counts (its controller stopped renewing it) and may be taken over. */
  expires: Date;
}

/** What `acquire` found: whether the slot was taken, and how many live slots the user held before. */
export interface BuildSlotClaim {
  taken: boolean;
  held: number;
}

/**
 * The running builds of every user, shared by every controller process that counts them
 * (a database table; in memory for one process). Slots are renewed while their build runs:
 * a controller that dies leaves slots that expire.
 */
export interface BuildSlotStore {
  /**
   * Takes `slot` when its user holds fewer than `limit` live slots at `now`, in one step
   * that concurrent callers, in this process or another, cannot interleave: of builds sent
   * together, at most `limit` are taken. Expired slots of the user are removed first.
   */
  acquire(slot: BuildSlot, limit: number, now: Date): Promise<BuildSlotClaim>;
  /** Moves a live slot's expiry; nothing for a slot that is gone. */
  renew(build: string, expires: Date): Promise<void>;
  /** Removes a slot; nothing for a slot that is gone. */
  release(build: string): Promise<void>;
}
