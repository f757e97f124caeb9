import { Unavailable } from '../errors';
import { FollowerSlots } from './follower-slots';
import type { AuditEvent, EventQuery } from '../model/events';
import { assertPageExists, sliceOf, type Page, type PageRequest } from '../model/pagination';
import { isAdmin } from '../rules/apps';
import { parseEventQuery } from '../rules/events';
import { loadVisibleApp, type Actor, type CoreDependencies } from './context';

/**
 * The audit journal: administrators see every event (those of deleted apps too), other
 * users the events of the apps they can see now (by the app's uuid: not those of a deleted
 * app whose name was taken again) and those of their own account.
 */
export class ListEvents {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws ValidationFailed for a bad filter; NotFound for a page past the end. */
  async execute(actor: Actor, filters: Record<string, unknown>, page: PageRequest): Promise<Page<AuditEvent>> {
    const query: EventQuery = { ...parseEventQuery(filters), visibleTo: isAdmin(actor.user) ? null : actor.user.username };
    const result = await this.deps.uow.repositories.events.list(query, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** The events of one app (by its uuid, so not an earlier app's of the same name), newest first: who may see the app sees them. */
export class ListAppEvents {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow'>) {}

  /** @throws ValidationFailed for a bad filter; NotFound (app, or a page past the end), AppNotVisible. */
  async execute(actor: Actor, appId: string, filters: Record<string, unknown>, page: PageRequest): Promise<Page<AuditEvent>> {
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const result = await repos.events.list({ ...parseEventQuery(filters), appUuid: app.uuid }, sliceOf(page));
    assertPageExists(page, result.count);
    return result;
  }
}

/** A followed event stream. */
export interface FollowedEvents {
  /** Stops the delivery of new events; calling it again does nothing. */
  unsubscribe(): void;
}

/** Events read per query while a follower catches up. */
const CATCH_UP_BATCH = 500;

/**
 * An app's events as they are appended, each once and in journal order, from after
 * `lastEventId` (a reconnecting client's `Last-Event-ID`) or from now. The journal is the
 * source of truth: the signal only says when to read it again, so followers on one
 * controller process see changes made through another. The limits are those of log
 * followers (`logFollowersPerUser`, `logFollowersTotal`), counted apart.
 */
export class FollowEvents {
  private readonly slots: FollowerSlots;

  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'settings' | 'journalSignal'>) {
    this.slots = new FollowerSlots(deps.settings, { code: 'EVENTS.TOO_MANY_FOLLOWERS', streams: 'event streams', followed: 'event streams' });
  }

  /**
   * @throws NotFound, AppNotVisible; TooMany / Unavailable (EVENTS.TOO_MANY_FOLLOWERS) past the limits;
   *   Unavailable (EVENTS.NO_SIGNAL) when this controller has no journal signal.
   */
  async execute(actor: Actor, appId: string, lastEventId: string | null, listener: (events: AuditEvent[]) => void): Promise<FollowedEvents> {
    const signal = this.deps.journalSignal;
    if (!signal) throw new Unavailable('EVENTS.NO_SIGNAL', 'This server cannot stream events.');
    const repos = this.deps.uow.repositories;
    const app = await loadVisibleApp(repos, actor, appId);
    const release = this.slots.hold(actor.user.username);
    let cursor: string | null;
    try {
      cursor = lastEventId ?? (await repos.events.newest(app.uuid));
    } catch (error) {
      release();
      throw error;
    }
    let open = true;
    let reading = false;
    let again = false;
    // One read at a time: signals that come during a read ask for one more after it.
    const read = async (): Promise<void> => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      try {
        do {
          again = false;
          for (;;) {
            if (!open) return;
            const batch = await repos.events.after(app.uuid, cursor, CATCH_UP_BATCH);
            if (!open || batch.length === 0) break;
            cursor = (batch[batch.length - 1] as AuditEvent).uuid;
            listener(batch);
            if (batch.length < CATCH_UP_BATCH) break;
          }
        } while (again && open);
      } catch {
        // The database failed this once; the next signal reads again from the same cursor.
      } finally {
        reading = false;
      }
    };
    const stop = signal.subscribe(() => void read());
    // Whatever was appended after the cursor before the subscription goes out first.
    void read();
    return {
      unsubscribe: () => {
        if (!open) return;
        open = false;
        stop();
        release();
      },
    };
  }

}

/** Deletes events, finished webhook deliveries and idempotent answers past their retention; the server runs it periodically. */
export class PruneJournal {
  constructor(private readonly deps: Pick<CoreDependencies, 'uow' | 'clock' | 'settings' | 'idempotency'>) {}

  /** How many events (and stored idempotent answers) were deleted. */
  async execute(): Promise<{ events: number; deliveries: number; idempotent: number }> {
    const now = this.deps.clock.now().getTime();
    const horizon = new Date(now - this.deps.settings.eventRetentionDays * 86_400_000);
    const events = await this.deps.uow.repositories.events.prune(horizon);
    // A delivery record is kept as long as the event it delivered.
    const deliveries = await this.deps.uow.repositories.deliveries.prune(horizon);
    const store = this.deps.idempotency;
    const idempotent = store ? await store.prune(new Date(now - this.deps.settings.idempotencyRetentionHours * 3_600_000)) : 0;
    return { events, deliveries, idempotent };
  }
}
