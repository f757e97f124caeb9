/**
 * How a deploy ended: `succeeded` (the release is live), `rejected` (the request was refused
 * before anything ran: validation, permissions, an absent app or build), or `failed` (the
 * platform could not carry it out: the scheduler or the database was unavailable, or an
 * unexpected error).
 */
export type DeployOutcome = 'succeeded' | 'rejected' | 'failed';

/**
 * Watches deploys, that is new releases (config changes, builds, source pushes, rollbacks),
 * e.g. to count and time them. Optional: the core works without one.
 */
export interface DeployObserver {
  /**
   * Called when a deploy of the app begins; the returned function is called once, with the
   * outcome, when it ends. Both must return quickly and must not throw.
   */
  deployStarted(app: string): (outcome: DeployOutcome) => void;
}

/** The observer used when none is given: it watches nothing. */
export const NO_DEPLOY_OBSERVER: DeployObserver = Object.freeze({
  deployStarted: () => () => undefined,
});
