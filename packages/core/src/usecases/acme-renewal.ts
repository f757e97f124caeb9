import type { TlsStore } from '../ports/acme';
import type { TlsName } from '../model/tls';
import { acmeNamesOf, issuanceDue } from '../rules/acme';
import { nextTurn, overPendingCap, pendingCapReason, waitsOnPendingCap, type IssuanceCandidate } from '../rules/acme-turns';
import type { Repositories } from '../ports/repositories';
import { CertificateForServerName } from './resources';
import { domainsOf, hasPlatformWildcard, uploadedCovers } from './tls';
import type { CoreDependencies } from './context';
import { IssuanceAttempt, saveUnderLease, type AttemptOutcome } from './acme-attempt';

/** What one round of issuance and renewal did. */
export interface RenewalRound {
  issued: string[];
  failed: string[];
  /** Names recorded for the first time (pending). */
  added: string[];
  /** Names forgotten: their domain or app is gone, or moved to another app. */
  removed: string[];
  /** Names over their owner's cap of pending names (ACME_PENDING_PER_USER), not ordered. */
  waiting: string[];
  /** Names put off because the ACME account's rate limit was reached (new orders paused). */
  paused: string[];
}

/** A round whose names are queued: what it recorded, and its attempts' outcomes once they all ended. */
export interface StartedRound {
  added: string[];
  removed: string[];
  waiting: string[];
  /** Resolves with the whole round once its attempts ended (a later round takes over the names it had not started yet). */
  settled: Promise<RenewalRound>;
}

interface Wanted {
  app: string;
  owner: string;
}

/** Every app's ACME names: name to app and the app's owner. */
async function wantedNames(repos: Repositories, platformDomain: string, wildcard: boolean): Promise<Map<string, Wanted>> {
  const wanted = new Map<string, Wanted>();
  for (let offset = 0; ; offset += 100) {
    const page = await repos.apps.listVisibleTo(null, { offset, limit: 100 });
    for (const app of page.items) {
      for (const name of acmeNamesOf(app.id, await domainsOf(repos, app.id), platformDomain, wildcard)) wanted.set(name, { app: app.id, owner: app.owner });
    }
    if (page.items.length < 100) return wanted;
  }
}

interface Queued extends IssuanceCandidate {
  row: TlsName;
}

/** The names one round queued, and its attempts. */
interface RoundQueue {
  holder: string;
  waiting: Queued[];
  active: number;
  round: RenewalRound;
  error: unknown;
  settle: (round: RenewalRound) => void;
  fail: (error: unknown) => void;
  done: boolean;
}

/**
 * Automatic HTTPS: each round records the names every app should have a certificate for
 * (custom domains; `<app>.<platform domain>` without an operator wildcard), forgets the names
 * no app has any more, and orders or renews each name that is due. An uploaded certificate
 * serving a name wins (the name is left alone).
 *
 * Fair between tenants: up to `concurrency` orders run at once in this process, the apps'
 * owners taking turns for free slots (the owner with the fewest orders running first), so an
 * owner's stalled names hold no other owner's name back by more than one order's time. Of an
 * owner's names without a certificate, only `pendingPerOwner` are ordered; the others wait,
 * taking no slot, their reason saying why. A failure backs the name off (doubling, or the
 * server's Retry-After if later), kept apart from the name's row so that removing and adding
 * it again starts no new order before then; the account's rate limit pauses every new order
 * of every process until the server's Retry-After. One instance per process: its slots are
 * shared by its rounds, which may overlap (a newer round takes over the names an older one has
 * not started).
 */
export class RenewCertificates {
  private readonly attempts: IssuanceAttempt;
  /** The names being ordered by this process, to their owner. */
  private readonly running = new Map<string, string>();
  private lastOwner: string | null = null;
  private queue: RoundQueue | null = null;
  private pausedUntil = 0;

  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'tls' | 'acme' | 'secrets' | 'clock' | 'logs'>) {
    this.attempts = new IssuanceAttempt(deps);
  }

  /** One whole round: resolves once its attempts ended. `holder` names this process in the leases it takes. */
  async execute(holder: string): Promise<RenewalRound> {
    return (await this.start(holder)).settled;
  }

  /** Records and forgets names, then queues the due ones and starts as many as the free slots take; resolves before the attempts end. */
  async start(holder: string): Promise<StartedRound> {
    const round: RenewalRound = { issued: [], failed: [], added: [], removed: [], waiting: [], paused: [] };
    const { tls, acme } = this.deps;
    if (!tls || !acme) return { added: [], removed: [], waiting: [], settled: Promise.resolve(round) };
    const uploaded = new CertificateForServerName(this.deps);
    const platform = this.deps.settings.platformDomain;
    const wanted = await wantedNames(this.deps.uow.repositories, platform, await hasPlatformWildcard(uploaded, platform));
    const rows = await this.reconcile(tls, wanted, round);
    const pending: Array<TlsName & { owner: string }> = [];
    for (const row of rows) {
      if (row.certificate === null && !(await uploadedCovers(uploaded, row.name))) pending.push({ ...row, owner: (wanted.get(row.name) as Wanted).owner });
    }
    const over = overPendingCap(pending, acme.settings.pendingPerOwner);
    await this.markWaiting(pending, over, holder);
    round.waiting = [...over].sort();
    const now = this.deps.clock.now();
    this.pausedUntil = (await tls.ordersPausedUntil(now))?.getTime() ?? 0;
    const orderable = new Set(pending.map((row) => row.name));
    const due: Queued[] = [];
    for (const row of rows) {
      if (over.has(row.name) || this.running.has(row.name) || !issuanceDue(row, now, acme.settings)) continue;
      // A name without a certificate is orderable unless an upload serves it (then it is not in `pending`).
      if (row.certificate === null ? !orderable.has(row.name) : await uploadedCovers(uploaded, row.name)) continue;
      due.push({ name: row.name, owner: (wanted.get(row.name) as Wanted).owner, row });
    }
    const settled = this.enqueue(holder, due, round);
    return { added: round.added, removed: round.removed, waiting: round.waiting, settled };
  }

  /** Records the wanted names that have no row (with their kept back-off) and removes the rows no app wants; the rows of the wanted names. */
  private async reconcile(tls: TlsStore, wanted: Map<string, Wanted>, round: RenewalRound): Promise<TlsName[]> {
    const now = this.deps.clock.now();
    await tls.forgetBackoffsBefore(new Date(now.getTime() - this.deps.acme!.settings.retryMaxSeconds * 1000));
    const recorded = new Map((await tls.list()).map((row) => [row.name, row]));
    for (const row of recorded.values()) {
      if (wanted.get(row.name)?.app === row.app) continue;
      await tls.remove(row.name);
      recorded.delete(row.name);
      round.removed.push(row.name);
    }
    for (const [name, { app, owner }] of wanted) {
      if (recorded.has(name)) continue;
      const kept = await tls.backoff(name, owner);
      const failures = kept?.failures ?? 0;
      const row: TlsName = {
        name,
        app,
        state: failures > 0 ? 'failed' : 'pending',
        certificate: null,
        sealedKey: null,
        expires: null,
        reason: kept?.reason ?? null,
        failures,
        nextAttempt: kept?.nextAttempt ?? now,
        updated: now,
      };
      await tls.insert(row);
      recorded.set(name, (await tls.find(name)) ?? row);
      round.added.push(name);
    }
    return [...recorded.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Says on each name over its owner's cap why it waits, and takes the word back from a name that no longer is. */
  private async markWaiting(pending: readonly TlsName[], over: ReadonlySet<string>, holder: string): Promise<void> {
    const reason = pendingCapReason(this.deps.acme!.settings.pendingPerOwner);
    for (const row of pending) {
      if (over.has(row.name) && row.reason !== reason) {
        await saveUnderLease(this.deps, { ...row, state: 'pending', reason, updated: this.deps.clock.now() }, holder);
      } else if (!over.has(row.name) && waitsOnPendingCap(row)) {
        await saveUnderLease(this.deps, { ...row, state: row.failures > 0 ? 'failed' : 'pending', reason: null, updated: this.deps.clock.now() }, holder);
      }
    }
  }

  /** Makes `due` the queue (an older round's names not started yet are dropped: this one lists them if they are still due) and fills the free slots. */
  private enqueue(holder: string, due: Queued[], round: RenewalRound): Promise<RenewalRound> {
    const older = this.queue;
    const settled = new Promise<RenewalRound>((resolve, reject) => {
      this.queue = { holder, waiting: due, active: 0, round, error: undefined, settle: resolve, fail: reject, done: false };
    });
    if (older !== null) {
      older.waiting = [];
      this.settle(older);
    }
    this.fill();
    return settled;
  }

  /** Starts queued names while slots are free and new orders are not paused, the owners taking turns. */
  private fill(): void {
    const queue = this.queue;
    if (queue === null) return;
    const { concurrency } = this.deps.acme!.settings;
    while (this.running.size < concurrency) {
      if (this.pausedUntil > this.deps.clock.now().getTime()) {
        queue.round.paused.push(...queue.waiting.map((candidate) => candidate.name));
        queue.waiting = [];
        break;
      }
      queue.waiting = queue.waiting.filter((candidate) => !this.running.has(candidate.name));
      const index = nextTurn(queue.waiting, this.runningByOwner(), this.lastOwner);
      if (index === null) break;
      const [next] = queue.waiting.splice(index, 1) as [Queued];
      this.lastOwner = next.owner;
      this.running.set(next.name, next.owner);
      queue.active += 1;
      void this.attempt(queue, next);
    }
    this.settle(queue);
  }

  private async attempt(queue: RoundQueue, next: Queued): Promise<void> {
    try {
      const outcome: AttemptOutcome = await this.attempts.run(next.row, queue.holder, next.owner);
      if (outcome === 'issued') queue.round.issued.push(next.name);
      else if (outcome === 'failed') queue.round.failed.push(next.name);
      else if (outcome === 'paused') {
        queue.round.paused.push(next.name);
        this.pausedUntil = Math.max(this.pausedUntil, (await this.deps.tls!.ordersPausedUntil(this.deps.clock.now()))?.getTime() ?? 0);
      }
    } catch (error) {
      queue.error ??= error;
    } finally {
      this.running.delete(next.name);
      queue.active -= 1;
      this.settle(queue);
      this.fill();
    }
  }

  private runningByOwner(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const owner of this.running.values()) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    return counts;
  }

  /** Ends a round once none of its attempts runs and it has nothing left to start (or a newer round took over). */
  private settle(queue: RoundQueue): void {
    if (queue.done || queue.active > 0 || (queue === this.queue && queue.waiting.length > 0)) return;
    queue.done = true;
    if (this.queue === queue) this.queue = null;
    for (const list of [queue.round.issued, queue.round.failed, queue.round.paused]) list.sort();
    if (queue.error !== undefined) queue.fail(queue.error);
    else queue.settle(queue.round);
  }
}
