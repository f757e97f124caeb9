import type { LogEntry } from './entities';

/** A listener of one app's log, as LogStore.subscribe takes it. */
type Listener = (entries: LogEntry[]) => void;

/**
 * The listeners of each app's log, for LogStore implementations: adds and removes
 * subscriptions and hands appended entries to every listener of the app.
 */
export class LogSubscribers {
  private readonly byApp = new Map<string, Set<Listener>>();

  /**
   * Adds a listener of the app; the returned function removes it (calling it again does
   * nothing). Subscribing the same function twice gives two subscriptions.
   */
  add(app: string, listener: Listener): () => void {
    // A wrapper per subscription, so that each one is removed on its own.
    const subscription: Listener = (entries) => listener(entries);
    const set = this.byApp.get(app) ?? new Set<Listener>();
    set.add(subscription);
    this.byApp.set(app, set);
    return () => {
      const current = this.byApp.get(app);
      if (current === undefined || !current.delete(subscription)) return;
      if (current.size === 0) this.byApp.delete(app);
    };
  }

  /**
   * Gives every listener of the app its own copies of the entries, oldest first; a listener
   * that throws does not keep the others from being called.
   */
  notify(app: string, entries: readonly LogEntry[]): void {
    const listeners = this.byApp.get(app);
    if (listeners === undefined || entries.length === 0) return;
    for (const listener of [...listeners]) {
      try {
        listener(entries.map(copyEntry));
      } catch {
        // A listener's failure is its own business: the append succeeded.
      }
    }
  }

  /** How many subscriptions the app has. */
  count(app: string): number {
    return this.byApp.get(app)?.size ?? 0;
  }

  /** The apps that have at least one subscription. */
  apps(): string[] {
    return [...this.byApp.keys()];
  }
}

function copyEntry(entry: LogEntry): LogEntry {
  return { time: new Date(entry.time.getTime()), source: entry.source, message: entry.message };
}
