import { IssuanceFailed, type ChallengeBoard, type TlsStore } from '../ports/acme';
import type { TlsName } from '../model/tls';
import { issuanceDue, nextAttemptAfterFailure } from '../rules/acme';
import { rateLimitScope } from '../rules/acme-turns';
import { logEvent, type CoreDependencies } from './context';

/** The longest an answer to a challenge stays published. */
const CHALLENGE_TTL_MS = 60 * 60 * 1000;

/** What one attempt came to: issued, failed, put off by the account's rate limit, or not made (another process had the name, or it was not due any more). */
export type AttemptOutcome = 'issued' | 'failed' | 'paused' | null;

export type AcmeDeps = Pick<CoreDependencies, 'uow' | 'settings' | 'tls' | 'acme' | 'secrets' | 'clock' | 'logs'>;

/** Publishes challenge answers in the TLS store, where every controller process's router finds them. */
class StoredChallenges implements ChallengeBoard {
  constructor(
    private readonly tls: TlsStore,
    private readonly now: () => Date,
  ) {}

  publish(token: string, keyAuthorization: string, name: string): Promise<void> {
    return this.tls.putChallenge(token, keyAuthorization, name, new Date(this.now().getTime() + CHALLENGE_TTL_MS));
  }

  withdraw(token: string): Promise<void> {
    return this.tls.removeChallenge(token);
  }
}

/**
 * Writes a name's row under its lease: taken for the write and given back, unless another
 * process holds it (then nothing is written, and false is returned).
 */
export async function saveUnderLease(deps: AcmeDeps, row: TlsName, holder: string): Promise<boolean> {
  const tls = deps.tls!;
  const now = deps.clock.now();
  if (!(await tls.acquire(row.name, holder, new Date(now.getTime() + deps.acme!.settings.leaseSeconds * 1000), now))) return false;
  try {
    return await tls.save(row, holder);
  } finally {
    await tls.release(row.name, holder);
  }
}

/**
 * One issuance attempt of one name, under the name's lease so that only one controller
 * process orders it at a time. The name's back-off is kept apart from its row (an order that
 * runs counts as one until its lease ends), so that removing the name and adding it again
 * starts no order before the back-off ends. A rate limit of the ACME account pauses every
 * process's new orders until the server's Retry-After instead of counting against the name.
 */
export class IssuanceAttempt {
  /** The account key, read (or made) once for the attempts of this process that run side by side. */
  private account: Promise<string> | null = null;

  constructor(private readonly deps: AcmeDeps) {}

  /** Attempts `row`'s name, of an app of `owner`, as `holder`. */
  async run(row: TlsName, holder: string, owner: string): Promise<AttemptOutcome> {
    const tls = this.deps.tls!;
    const acme = this.deps.acme!;
    const started = this.deps.clock.now();
    const leaseEnd = new Date(started.getTime() + acme.settings.leaseSeconds * 1000);
    if (!(await tls.acquire(row.name, holder, leaseEnd, started))) return null;
    try {
      const current = await tls.find(row.name);
      if (current === null || !issuanceDue(current, started, acme.settings)) return null;
      await tls.keepBackoff({ name: current.name, owner, failures: current.failures, nextAttempt: leaseEnd, reason: current.reason });
      try {
        const accountKey = await this.accountKey(tls);
        const issued = await acme.authority.issue({ name: current.name, accountKey, challenges: new StoredChallenges(tls, () => this.deps.clock.now()) });
        const now = this.deps.clock.now();
        await tls.save(
          { ...current, state: 'issued', certificate: issued.certificate, sealedKey: this.deps.secrets.seal(issued.key), expires: issued.expires, reason: null, failures: 0, nextAttempt: now, updated: now },
          holder,
        );
        await tls.forgetBackoff(current.name, owner);
        acme.observer?.attempted('issued');
        await logEvent(this.deps, current.app, `certificate for ${current.name} issued, valid until ${issued.expires.toISOString()}`);
        return 'issued';
      } catch (error) {
        return await this.failed(current, holder, owner, error);
      }
    } finally {
      await tls.release(row.name, holder);
    }
  }

  private async failed(current: TlsName, holder: string, owner: string, error: unknown): Promise<AttemptOutcome> {
    const acme = this.deps.acme!;
    const now = this.deps.clock.now();
    const reason = error instanceof IssuanceFailed ? error.reason : `the certificate could not be obtained: ${error instanceof Error ? error.message : String(error)}`;
    const retryAfter = error instanceof IssuanceFailed ? error.retryAfter : null;
    // A certificate already issued keeps being served while its renewal is retried.
    const state = current.certificate === null ? 'failed' : 'issued';
    if (error instanceof IssuanceFailed && error.rateLimited && rateLimitScope(reason, current.name) === 'account') {
      const until = retryAfter ?? new Date(now.getTime() + acme.settings.retryBaseSeconds * 1000);
      await this.deps.tls!.pauseOrders(until);
      await this.record({ ...current, state: current.certificate === null ? 'pending' : 'issued', reason, nextAttempt: until, updated: now }, holder, owner, until);
      await logEvent(this.deps, current.app, `certificate for ${current.name} put off: the ACME account's rate limit was reached; new orders are paused until ${until.toISOString()}`);
      return 'paused';
    }
    const failures = current.failures + 1;
    const nextAttempt = nextAttemptAfterFailure(now, failures, retryAfter, acme.settings);
    await this.record({ ...current, state, reason, failures, nextAttempt, updated: now }, holder, owner, nextAttempt);
    acme.observer?.attempted('failed');
    await logEvent(this.deps, current.app, `certificate for ${current.name} failed: ${reason}; next attempt after ${nextAttempt.toISOString()}`);
    return 'failed';
  }

  /**
   * Writes a failure to the name's row and keeps its back-off for `owner` until `hold`. When
   * the name was removed and added again by the same owner while its order ran (a new row,
   * whose lease nobody held), the new row gets the failures and next attempt.
   */
  private async record(row: TlsName, holder: string, owner: string, hold: Date): Promise<void> {
    const tls = this.deps.tls!;
    await tls.keepBackoff({ name: row.name, owner, failures: row.failures, nextAttempt: hold, reason: row.reason });
    if (await tls.save(row, holder)) return;
    const fresh = await tls.find(row.name);
    if (fresh === null || fresh.certificate !== null) return;
    if ((await this.deps.uow.repositories.apps.findById(fresh.app))?.owner !== owner) return;
    await saveUnderLease(this.deps, { ...fresh, state: row.failures > 0 ? 'failed' : 'pending', reason: row.reason, failures: row.failures, nextAttempt: hold, updated: row.updated }, holder);
  }

  /** The ACME account key of the directory, made and stored sealed on first use. */
  private accountKey(tls: TlsStore): Promise<string> {
    this.account ??= this.readAccountKey(tls).catch((error: unknown) => {
      this.account = null;
      throw error;
    });
    return this.account;
  }

  private async readAccountKey(tls: TlsStore): Promise<string> {
    const authority = this.deps.acme!.authority;
    const sealed = await tls.account(authority.directory);
    if (sealed !== null) return this.deps.secrets.open(sealed);
    const stored = await tls.saveAccount(authority.directory, this.deps.secrets.seal(await authority.createAccountKey()), this.deps.clock.now());
    return this.deps.secrets.open(stored);
  }
}
